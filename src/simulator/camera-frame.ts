/**
 * Simulated "front door camera": draws a small porch scene into a raw RGB
 * buffer and encodes it as JPEG with sharp. The output is a pure function of
 * the timestamp (to the second) and the options, so the same inputs always
 * give the same bytes, while consecutive seconds give different frames (a
 * drifting shadow plus sensor noise seeded from the timestamp).
 */
import sharp from 'sharp';
import { drawText, GLYPH_HEIGHT, textWidth, type Rgb } from './bitmap-font.js';

export interface FrameOptions {
  width?: number;
  height?: number;
  label?: string;
  quality?: number;
}

const DEFAULT_WIDTH = 640;
const DEFAULT_HEIGHT = 360;
const DEFAULT_QUALITY = 70;
const DEFAULT_LABEL = 'FRONT DOOR';
const MAX_SIDE = 4096;

const WHITE: Rgb = [255, 255, 255];

export async function drawCameraFrame(at: Date, options: FrameOptions = {}): Promise<Buffer> {
  const width = options.width ?? DEFAULT_WIDTH;
  const height = options.height ?? DEFAULT_HEIGHT;
  const quality = options.quality ?? DEFAULT_QUALITY;
  const label = options.label ?? DEFAULT_LABEL;
  checkInt('width', width, 16, MAX_SIDE);
  checkInt('height', height, 16, MAX_SIDE);
  checkInt('quality', quality, 1, 100);
  const ms = at.getTime();
  if (!Number.isFinite(ms)) throw new RangeError('drawCameraFrame: invalid Date');

  const seconds = Math.floor(ms / 1000);
  const buf = Buffer.alloc(width * height * 3);

  // Overlay layout first: the bar height depends on the text scale.
  const stamp = formatUtc(at);
  const pad = Math.max(2, Math.round(height / 60));
  let scale = Math.min(3, Math.max(1, Math.floor(height / 120)));
  while (scale > 1 && textWidth(`${stamp}  ${label}`, scale) + 4 * pad > width) scale--;
  const barH = GLYPH_HEIGHT * scale + 2 * pad;
  const barTop = height - barH;

  drawScene(buf, width, barTop, seconds);

  fillRect(buf, width, 0, barTop, width, height, [18, 18, 20]);
  drawText(buf, width, height, pad * 2, barTop + pad, stamp, scale, WHITE);
  const labelX = width - pad * 2 - textWidth(label, scale);
  drawText(buf, width, height, labelX, barTop + pad, label, scale, WHITE);

  return sharp(buf, { raw: { width, height, channels: 3 } })
    .jpeg({ quality })
    .toBuffer();
}

/** `YYYY-MM-DD HH:MM:SS` in UTC. */
export function formatUtc(at: Date): string {
  return at.toISOString().slice(0, 19).replace('T', ' ');
}

function checkInt(name: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`drawCameraFrame: ${name} must be an integer in [${min}, ${max}], got ${value}`);
  }
}

/** Draws the porch scene into rows [0, sceneH) of the buffer. */
function drawScene(buf: Buffer, width: number, sceneH: number, seconds: number): void {
  const skyH = Math.round(sceneH * 0.14);
  const eaveH = Math.max(2, Math.round(sceneH * 0.04));
  const floorY = Math.round(sceneH * 0.78);

  // Sky, eave, sided wall, porch floor: one colour per row.
  for (let y = 0; y < sceneH; y++) {
    let c: Rgb;
    if (y < skyH) {
      c = lerp([120, 170, 225], [185, 215, 240], y / Math.max(1, skyH));
    } else if (y < skyH + eaveH) {
      c = [70, 52, 40];
    } else if (y < floorY) {
      const t = (y - skyH - eaveH) / Math.max(1, floorY - skyH - eaveH);
      c = lerp([222, 212, 190], [176, 166, 146], t);
      const sidingPitch = Math.max(4, Math.round(sceneH / 24));
      if ((y - skyH - eaveH) % sidingPitch === sidingPitch - 1) c = shade(c, 0.82);
    } else {
      const t = (y - floorY) / Math.max(1, sceneH - floorY);
      c = lerp([128, 118, 104], [100, 92, 80], t);
    }
    fillRect(buf, width, 0, y, width, y + 1, c);
  }
  // Floor boards: vertical seams.
  const plank = Math.max(8, Math.round(width / 14));
  for (let x = plank; x < width; x += plank) fillRect(buf, width, x, floorY, x + 1, sceneH, [84, 76, 66]);

  // Door with frame, four recessed panels and a brass handle.
  const doorW = Math.round(width * 0.2);
  const doorX = Math.round((width - doorW) / 2);
  const doorY = skyH + eaveH + Math.round(sceneH * 0.08);
  const frame = Math.max(2, Math.round(width / 100));
  fillRect(buf, width, doorX - frame, doorY - frame, doorX + doorW + frame, floorY, [245, 243, 236]);
  fillRect(buf, width, doorX, doorY, doorX + doorW, floorY, [128, 34, 38]);
  const doorH = floorY - doorY;
  const inset = Math.max(2, Math.round(doorW * 0.12));
  const panelW = Math.round((doorW - 3 * inset) / 2);
  const panelH = Math.round((doorH - 3 * inset) / 2);
  for (let py = 0; py < 2; py++) {
    for (let px = 0; px < 2; px++) {
      const x0 = doorX + inset + px * (panelW + inset);
      const y0 = doorY + inset + py * (panelH + inset);
      fillRect(buf, width, x0, y0, x0 + panelW, y0 + panelH, [98, 24, 28]);
      fillRect(buf, width, x0 + 2, y0 + 2, x0 + panelW - 2, y0 + panelH - 2, [116, 30, 34]);
    }
  }
  const knob = Math.max(3, Math.round(doorW * 0.07));
  const knobX = doorX + doorW - inset - knob;
  const knobY = doorY + Math.round(doorH * 0.55);
  fillRect(buf, width, knobX - 1, knobY - 1, knobX + knob + 1, knobY + knob + 1, [120, 92, 30]);
  fillRect(buf, width, knobX, knobY, knobX + knob, knobY + knob, [212, 172, 66]);

  // Doormat: a trapezoid that widens toward the camera, with a border.
  const matTop = floorY + Math.round((sceneH - floorY) * 0.15);
  const matBottom = floorY + Math.round((sceneH - floorY) * 0.85);
  const border = Math.max(2, Math.round(width / 160));
  for (let y = matTop; y < matBottom; y++) {
    const t = (y - matTop) / Math.max(1, matBottom - matTop);
    const half = Math.round(doorW * (0.6 + 0.15 * t));
    const x0 = Math.round(width / 2) - half;
    const x1 = Math.round(width / 2) + half;
    const edge = y - matTop < border || matBottom - y <= border;
    fillRect(buf, width, x0, y, x1, y + 1, edge ? [52, 40, 30] : [96, 70, 44]);
    if (!edge) {
      fillRect(buf, width, x0, y, x0 + border, y + 1, [52, 40, 30]);
      fillRect(buf, width, x1 - border, y, x1, y + 1, [52, 40, 30]);
    }
  }

  applyShadowAndNoise(buf, width, sceneH, skyH, seconds);
}

/**
 * A soft diagonal shadow (a tree branch outside the frame) that drifts across
 * the porch once a minute, plus a little per-pixel sensor noise. Both are
 * keyed on the timestamp's whole seconds.
 */
function applyShadowAndNoise(buf: Buffer, width: number, sceneH: number, skyH: number, seconds: number): void {
  const phase = (((seconds % 60) + 60) % 60) / 60;
  const bandW = width * 0.12;
  const centre = -bandW + phase * (width + sceneH * 0.5 + 2 * bandW);
  let rng = hash32(seconds) || 0x9e3779b9;
  for (let y = 0; y < sceneH; y++) {
    const rowShift = y * 0.5;
    for (let x = 0; x < width; x++) {
      let f = 1;
      if (y >= skyH) {
        const d = Math.abs(x + rowShift - centre) / bandW;
        if (d < 1) f = 1 - 0.35 * (1 - d * d);
      }
      rng ^= rng << 13;
      rng ^= rng >>> 17;
      rng ^= rng << 5;
      const noise = (rng & 7) - 3.5;
      const i = (y * width + x) * 3;
      buf[i] = clamp(buf[i]! * f + noise);
      buf[i + 1] = clamp(buf[i + 1]! * f + noise);
      buf[i + 2] = clamp(buf[i + 2]! * f + noise);
    }
  }
}

function fillRect(buf: Buffer, width: number, x0: number, y0: number, x1: number, y1: number, c: Rgb): void {
  const height = buf.length / (width * 3);
  const xa = Math.max(0, Math.round(x0));
  const xb = Math.min(width, Math.round(x1));
  const ya = Math.max(0, Math.round(y0));
  const yb = Math.min(height, Math.round(y1));
  for (let y = ya; y < yb; y++) {
    for (let i = (y * width + xa) * 3, end = (y * width + xb) * 3; i < end; i += 3) {
      buf[i] = c[0];
      buf[i + 1] = c[1];
      buf[i + 2] = c[2];
    }
  }
}

function lerp(a: Rgb, b: Rgb, t: number): Rgb {
  return [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t];
}

function shade(c: Rgb, f: number): Rgb {
  return [c[0] * f, c[1] * f, c[2] * f];
}

function clamp(v: number): number {
  return v <= 0 ? 0 : v >= 255 ? 255 : Math.round(v);
}

/** Integer hash (lowbias32) so nearby seconds seed unrelated noise. */
function hash32(n: number): number {
  let h = (n ^ Math.floor(n / 0x100000000)) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return h >>> 0;
}
