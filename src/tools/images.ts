// Camera frames fitted to what a model accepts: the kit's 5 MiB per image,
// and a longest side that vision models take without resampling.
// sharp (a native image library) is loaded on the first frame, not by every command that builds a pipeline.
import { IMAGE_LIMITS } from './types.js';

export interface ImageLimits {
  maxImageBytes: number;
  /** Longest side in pixels. */
  maxDimension: number;
}

export const DEFAULT_IMAGE_LIMITS: ImageLimits = { maxImageBytes: IMAGE_LIMITS.maxImageBytes, maxDimension: 2048 };

/**
 * Most pixels a camera frame may declare (8K video is 33 million). A frame is
 * device data: a few kilobytes of PNG can declare a picture that takes
 * gigabytes to decode, so the size is checked from the header before decoding.
 */
export const MAX_FRAME_PIXELS = 40_000_000;

export interface FittedImage {
  bytes: Buffer;
  mimeType: string;
  width?: number;
  height?: number;
  resized: boolean;
}

export async function fitImage(bytes: Buffer, mimeType: string, limits: Partial<ImageLimits> = {}): Promise<FittedImage> {
  const { maxImageBytes, maxDimension } = { ...DEFAULT_IMAGE_LIMITS, ...limits };
  const { default: sharp } = await import('sharp');
  const meta = await sharp(bytes).metadata();
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  // Only the first frame of an animation is decoded (sharp's default), so only its size counts.
  if (width * height > MAX_FRAME_PIXELS) {
    throw new Error(`the frame declares ${width}x${height} pixels, over the ${MAX_FRAME_PIXELS}-pixel limit`);
  }
  if (bytes.length <= maxImageBytes && Math.max(width, height) <= maxDimension) {
    return { bytes, mimeType, width, height, resized: false };
  }
  // Shrink until it fits: each round takes the long side down by a quarter.
  let side = Math.min(maxDimension, Math.max(width, height));
  for (let round = 0; round < 12; round++) {
    const out = await sharp(bytes, { limitInputPixels: MAX_FRAME_PIXELS })
      .resize({ width: side, height: side, fit: 'inside', withoutEnlargement: true })
      .jpeg({ quality: 80 })
      .toBuffer({ resolveWithObject: true });
    if (out.data.length <= maxImageBytes) {
      return { bytes: out.data, mimeType: 'image/jpeg', width: out.info.width, height: out.info.height, resized: true };
    }
    side = Math.max(16, Math.floor(side * 0.75));
  }
  throw new Error(`cannot fit the image under ${maxImageBytes} bytes`);
}
