// The embedded broker: aedes on a loopback port, for a house with no broker
// yet and for the demo. aedes speaks MQTT 3.1.1 only. Its hooks are the
// transport gate (broker-access.ts): only Hearth publishes on command topics.
import { createServer, type Server, type Socket } from 'node:net';
import { Aedes, type AuthenticateError } from 'aedes';
import type { Logger } from '../log.js';
import { PerKeyThrottle } from '../util/per-key-throttle.js';
import { type BrokerAccess, BrokerAccessError } from './broker-access.js';

export class BrokerStartError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'BrokerStartError';
  }
}

export interface EmbeddedBroker {
  host: string;
  port: number;
  url: string;
  close(): Promise<void>;
}

export async function startEmbeddedBroker(host: string, port: number, log: Logger, access?: BrokerAccess): Promise<EmbeddedBroker> {
  // A client retrying in a loop (a takeover of Hearth's client id, a guessed password) is logged once a minute.
  const refusals = new PerKeyThrottle();
  const broker = await Aedes.createBroker(
    access
      ? {
          authenticate(client, username, password, done) {
            try {
              access.authenticate(client, username, password);
              done(null, true);
            } catch (err) {
              const code = err instanceof BrokerAccessError ? err.returnCode : 5;
              const suppressed = refusals.take(`${client.id}\u0000${username ?? ''}\u0000${code}`);
              if (suppressed !== undefined)
                log.warn(
                  { clientId: client.id, username, returnCode: code, ...(suppressed ? { suppressed } : {}) },
                  `broker refused a connection: ${(err as Error).message}`,
                );
              done(Object.assign(new Error((err as Error).message), { returnCode: code }) as AuthenticateError, false);
            }
          },
          authorizePublish(client, packet, done) {
            const why = access.publishRefusal(client, packet.topic);
            if (!why) return done(null);
            if (client) access.refused(client, packet.topic, why);
            done(new Error(why));
          },
          authorizeSubscribe(client, sub, done) {
            // A refused filter gets SUBACK 0x80 (failure); the connection stays.
            done(null, access.maySubscribe(client, sub.topic) ? sub : null);
          },
        }
      : {},
  );
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    broker.handle(socket);
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    broker.close();
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      throw new BrokerStartError(
        `port ${port} on ${host} is already in use (another MQTT broker?): set mqtt.url to use that broker, ` +
          `or mqtt.embedded.port (HEARTH_MQTT_EMBEDDED_PORT, --broker-port) to move the embedded one`,
        code,
      );
    }
    throw new BrokerStartError(`embedded broker could not listen on ${host}:${port}: ${(err as Error).message}`, code);
  }
  const actual = (server.address() as { port: number }).port;
  log.info({ host, port: actual }, 'embedded MQTT broker listening');
  return {
    host,
    port: actual,
    url: `mqtt://${host}:${actual}`,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await new Promise<void>((resolve) => broker.close(() => resolve()));
    },
  };
}
