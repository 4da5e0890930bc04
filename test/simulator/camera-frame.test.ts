import { test } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { drawCameraFrame } from '../../src/simulator/camera-frame.js';

const AT = new Date('2024-05-17T08:30:15Z');

/** Count pixels whose R, G and B are all above `threshold` in rows [y0, y1) and columns [x0, x1). */
async function countBright(jpeg: Buffer, region: { x0: number; x1: number; y0: number; y1: number }, threshold = 200): Promise<number> {
  const { data, info } = await sharp(jpeg).raw().toBuffer({ resolveWithObject: true });
  assert.equal(info.channels, 3);
  let n = 0;
  for (let y = region.y0; y < region.y1; y++) {
    for (let x = region.x0; x < region.x1; x++) {
      const i = (y * info.width + x) * 3;
      if (data[i]! > threshold && data[i + 1]! > threshold && data[i + 2]! > threshold) n++;
    }
  }
  return n;
}

test('produces well-formed JPEG bytes', async () => {
  const jpeg = await drawCameraFrame(AT);
  assert.ok(Buffer.isBuffer(jpeg));
  assert.deepEqual([...jpeg.subarray(0, 3)], [0xff, 0xd8, 0xff], 'SOI marker');
  assert.deepEqual([...jpeg.subarray(-2)], [0xff, 0xd9], 'EOI marker');
});

test('defaults to 640x360 and honours a requested size', async () => {
  const def = await sharp(await drawCameraFrame(AT)).metadata();
  assert.equal(def.format, 'jpeg');
  assert.equal(def.width, 640);
  assert.equal(def.height, 360);

  const custom = await sharp(await drawCameraFrame(AT, { width: 320, height: 240, quality: 50 })).metadata();
  assert.equal(custom.format, 'jpeg');
  assert.equal(custom.width, 320);
  assert.equal(custom.height, 240);
});

test('frames one second apart differ; the same instant is reproducible', async () => {
  const a = await drawCameraFrame(AT);
  const b = await drawCameraFrame(new Date(AT.getTime() + 1000));
  const again = await drawCameraFrame(new Date(AT.getTime()));
  assert.ok(!a.equals(b), 'consecutive frames should differ');
  assert.ok(a.equals(again), 'same timestamp and options should give identical bytes');
});

test('the bottom bar carries bright timestamp and label text', async () => {
  const width = 640;
  const height = 360;
  const jpeg = await drawCameraFrame(AT, { label: 'FRONT DOOR' });
  // The bar is at least 7 glyph rows plus padding tall; sample the bottom 20 rows.
  const bar = { y0: height - 20, y1: height };
  const stampSide = await countBright(jpeg, { ...bar, x0: 0, x1: width / 2 });
  const labelSide = await countBright(jpeg, { ...bar, x0: width / 2, x1: width });
  assert.ok(stampSide > 200, `expected timestamp pixels in the bar, got ${stampSide}`);
  assert.ok(labelSide > 100, `expected label pixels in the bar, got ${labelSide}`);
  // Text, not a bright bar: most of the bar stays dark.
  assert.ok(stampSide + labelSide < (width * 20) / 2, 'bar background should be dark');

  const blankLabel = await drawCameraFrame(AT, { label: '' });
  const noLabel = await countBright(blankLabel, { ...bar, x0: (width * 3) / 4, x1: width });
  assert.equal(noLabel, 0, 'right end of the bar is dark without a label');
});

test('rejects invalid input', async () => {
  await assert.rejects(drawCameraFrame(new Date(Number.NaN)), RangeError);
  await assert.rejects(drawCameraFrame(AT, { width: 0 }), RangeError);
  await assert.rejects(drawCameraFrame(AT, { height: 10.5 }), RangeError);
  await assert.rejects(drawCameraFrame(AT, { quality: 101 }), RangeError);
});
