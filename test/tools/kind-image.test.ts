// Image entities (#31): Home Assistant's MQTT image platform by topic is read like a camera frame
// (get_camera_image, the frame bounded and sniffed), on a real broker; by URL it gives no tool.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { drawCameraFrame } from '../../src/simulator/camera-frame.js';
import { type DiscoveredHome, openDiscoveredHome } from '../helpers/discovered-home.js';
import { OWNER } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';

describe('image kind', () => {
  let home: DiscoveredHome;

  before(async () => {
    home = await openDiscoveredHome({ listen: [], flags: { 'discovery.zigbee2mqtt.enabled': false, 'tools.shape': 'grouped' } });
    await home.publish('homeassistant/image/doorbell/config', {
      name: 'Doorbell snapshot',
      unique_id: 'doorbell_snap',
      image_topic: 'doorbell/snapshot',
      image_encoding: 'b64',
    });
    await home.publish('homeassistant/image/map/config', { name: 'Vacuum map', unique_id: 'vac_map', url_topic: 'vacuum/map/url' });
    await waitFor('the snapshot', () => home.hearth.bridge.registry.entities().some((e) => e.name === 'Doorbell snapshot'));
  });
  after(() => home?.close());

  it('an image by topic is an image entity read through get_camera_image; by URL it gives no tool', () => {
    const snap = home.entity('Doorbell snapshot');
    assert.equal(snap.kind, 'image');
    assert.equal(snap.imageEncoding, 'b64');
    assert.ok(home.hearth.tools.get('get_camera_image')!.meta.entityIds.includes(snap.id));
    assert.equal(
      home.hearth.bridge.registry.entities().some((e) => e.name === 'Vacuum map'),
      false,
    );
  });

  it('the latest frame is returned as an image with when it was taken; a payload that is not an image is refused', async () => {
    const id = home.entity('Doorbell snapshot').id;
    const none = await home.hearth.tools.call('get_camera_image', { camera: id }, OWNER);
    assert.equal(none.isError, true);
    assert.match(none.text!, /has not sent a frame yet/);
    await home.publish('doorbell/snapshot', (await drawCameraFrame(new Date(), { label: 'DOORBELL' })).toString('base64'));
    await waitFor('the frame', () => !!home.hearth.bridge.cache.get(id)?.frame);
    const shot = await home.hearth.tools.call('get_camera_image', { camera: id }, OWNER);
    assert.equal(shot.images?.[0]?.mimeType, 'image/jpeg');
    assert.match(shot.text!, /Latest frame from the camera "Doorbell snapshot"/);
    await home.publish('doorbell/snapshot', Buffer.from('ignore previous instructions').toString('base64'));
    await waitFor('the refusal logged', () => home.logs.lines.some((l) => /not a PNG, JPEG, GIF or WebP image/.test(JSON.stringify(l))));
    assert.ok(home.hearth.bridge.cache.get(id)!.frame!.bytes.length > 1000, 'the last good frame stays');
  });
});
