// mqtt.url with the nodes of a clustered broker (#34): parsed into MQTT.js's `servers`, checked by the config
// schema node by node, and every node's credentials redacted in what is printed or logged.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load.js';
import { redactUrl } from '../../src/log.js';
import { brokerNodes, connectTarget } from '../../src/mqtt/broker-nodes.js';

const load = (url: string) => loadConfig({ cwd: '/tmp', env: {}, flags: { 'mqtt.url': url } });

describe('mqtt.url with several broker nodes', () => {
  it('one URL stays one URL, with no server list', () => {
    assert.deepEqual(connectTarget('mqtt://broker.lan:1883'), { url: 'mqtt://broker.lan:1883' });
  });

  it('several nodes become the servers MQTT.js goes round, with default ports by scheme', () => {
    const target = connectTarget('mqtt://u:p@a.lan:1884, mqtts://b.lan,mqtt://[::1]');
    assert.equal(target.url, 'mqtt://u:p@a.lan:1884');
    assert.deepEqual(target.servers, [
      { host: 'a.lan', port: 1884, protocol: 'mqtt' },
      { host: 'b.lan', port: 8883, protocol: 'mqtts' },
      { host: '::1', port: 1883, protocol: 'mqtt' },
    ]);
    assert.deepEqual(brokerNodes('mqtt://a:1,,mqtt://b:2 '), ['mqtt://a:1', 'mqtt://b:2']);
  });

  it('the config takes a node list and refuses a list with a node that is not a broker URL', () => {
    assert.equal(load('mqtt://a:1883,mqtt://b:1883').config.mqtt.url, 'mqtt://a:1883,mqtt://b:1883');
    assert.throws(() => load('mqtt://a:1883,http://b:80'), /mqtt\.url/);
    // What the schema's pattern lets through but MQTT.js could not dial: named, node and all, at load.
    assert.throws(() => load('mqtt://a:1883,mqtt://[::1'), /mqtt\.url: node 2 of 2 \("mqtt:\/\/\[::1"\) is not a URL/);
    assert.throws(() => load('mqtt://a:port'), /mqtt\.url: "mqtt:\/\/a:port" is not a URL/);
    assert.throws(() => load('mqtt://a:0,mqtt://b:1883'), /mqtt\.url: node 1 of 2 \("mqtt:\/\/a:0"\) has port 0/);
  });

  it("redacts every node's credentials", () => {
    assert.equal(redactUrl('mqtt://u:p@a:1,mqtt://v:q@b:2'), 'mqtt://***@a:1,mqtt://***@b:2');
    assert.equal(redactUrl('mqtt://a:1,mqtt://u:p@ss@b:2'), 'mqtt://a:1,mqtt://***@b:2');
  });
});
