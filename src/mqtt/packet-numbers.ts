// MQTT.js's packet writer (mqtt-packet) fills a cache of 65,536 two-byte Buffers
// the first time it writes a packet, for the 16-bit numbers of a packet (lengths,
// message ids): 6 MiB of heap kept for the life of the process, a quarter of what
// a bridge mirroring 10,000 entities keeps for everything else (bench/memory.ts).
// Writing each such number into a fresh 2-byte Buffer instead costs nothing we can
// measure at a home's message rates. The writer is mqtt.js's own copy, found from
// mqtt.js itself: it is not a dependency of ours.
import { createRequire } from 'node:module';

interface PacketModule {
  writeToStream: { cacheNumbers: boolean };
}

let done: boolean | undefined;

/** Turn the number cache off (idempotent); false when mqtt.js's packet writer cannot be found (then nothing changes). */
export function dropPacketNumberCache(): boolean {
  if (done !== undefined) return done;
  try {
    const fromMqtt = createRequire(createRequire(import.meta.url).resolve('mqtt'));
    const packet = fromMqtt('mqtt-packet') as PacketModule;
    packet.writeToStream.cacheNumbers = false;
    done = packet.writeToStream.cacheNumbers === false;
  } catch {
    done = false;
  }
  return done;
}
