// Test helper: ONE throwaway mosquitto with several listeners, for transport
// tests (password auth, WebSockets, TLS, mutual TLS). Everything lives in a
// private temp dir: a throwaway CA, server and client certificates made with
// openssl, a password file made with mosquitto_passwd, and the config.
//
// Started like brokers.ts's single-listener one (mosquitto-process.ts), with
// `user root` when we are root (otherwise mosquitto drops to the `mosquitto`
// user and cannot read our 0700 temp dir).
//
// mosquitto 2.0.x quirks handled here:
// - `allow_anonymous` / `password_file` are global unless `per_listener_settings
//   true`; we want them per listener.
// - A WebSockets listener (libwebsockets) ignores an IP bind address and binds
//   every interface (mosquitto issue #3045); it honours an interface name, so
//   the loopback interface's name is used instead (binds ::ffff:127.0.0.1).
// - A WebSockets-only config does not start at all; here there is always a
//   plain listener too.

import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';

import { freePort } from './brokers.js';
import { findBin, HOST, launchMosquitto, MosquittoExited, terminate, trackTempDir, tryConnect } from './mosquitto-process.js';

const START_TIMEOUT_MS = 8_000;

export interface Pki {
  ca: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

export interface MultiListenerMosquitto {
  dir: string;
  pki: Pki;
  username: string;
  password: string;
  ports: { mqtt: number; ws: number; tls: number; mtls: number };
  urls: { mqtt: string; ws: string; tls: string; mtls: string };
  /** What mosquitto printed so far (for failure messages). */
  log(): string;
  stop(): Promise<void>;
}

function requireBin(name: string): string {
  const file = findBin(name);
  if (!file) throw new Error(`${name} not found: install it (apt-get install -y ${name === 'openssl' ? 'openssl' : 'mosquitto'})`);
  return file;
}

function run(bin: string, args: string[], cwd: string): void {
  try {
    execFileSync(bin, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], timeout: 15_000 });
  } catch (err) {
    const e = err as { stderr?: Buffer; message: string };
    throw new Error(`${path.basename(bin)} ${args.join(' ')} failed: ${e.stderr?.toString() || e.message}`);
  }
}

/** A throwaway CA, a server cert for IP 127.0.0.1 and a client cert, all P-256, valid one day. */
export function makePki(dir: string): Pki {
  const openssl = requireBin('openssl');
  const p = (f: string) => path.join(dir, f);
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  run(
    openssl,
    [
      'req',
      '-x509',
      ...ecKey,
      '-keyout',
      p('ca.key'),
      '-out',
      p('ca.crt'),
      '-days',
      '1',
      '-subj',
      '/CN=Hearth Test CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
  const leaf = (name: string, cn: string, ext: string): void => {
    writeFileSync(p(`${name}.ext`), ext);
    run(openssl, ['req', '-new', ...ecKey, '-keyout', p(`${name}.key`), '-out', p(`${name}.csr`), '-subj', `/CN=${cn}`], dir);
    run(
      openssl,
      [
        'x509',
        '-req',
        '-in',
        p(`${name}.csr`),
        '-CA',
        p('ca.crt'),
        '-CAkey',
        p('ca.key'),
        '-CAcreateserial',
        '-out',
        p(`${name}.crt`),
        '-days',
        '1',
        '-sha256',
        '-extfile',
        p(`${name}.ext`),
      ],
      dir,
    );
  };
  leaf(
    'server',
    HOST,
    `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:${HOST}\n`,
  );
  leaf('client', 'hearth-test-client', 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n');
  return {
    ca: p('ca.crt'),
    caKey: p('ca.key'),
    serverCert: p('server.crt'),
    serverKey: p('server.key'),
    clientCert: p('client.crt'),
    clientKey: p('client.key'),
  };
}

/** The name of the interface that holds 127.0.0.1 ("lo" on Linux, "lo0" on macOS). */
function loopbackInterface(): string | undefined {
  for (const [name, addrs] of Object.entries(networkInterfaces())) {
    if (addrs?.some((a) => a.address === HOST)) return name;
  }
  return undefined;
}

async function distinctFreePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

/**
 * Start mosquitto with four listeners on 127.0.0.1:
 * - mqtt: plain MQTT, `allow_anonymous false` + password file (username/password below)
 * - ws:   MQTT over WebSockets, anonymous
 * - tls:  MQTT over TLS (server cert signed by the throwaway CA), anonymous
 * - mtls: MQTT over TLS with `require_certificate true` (client cert from the same CA)
 */
export async function startMultiListenerMosquitto(opts: { username?: string; password?: string } = {}): Promise<MultiListenerMosquitto> {
  const mosquitto = requireBin('mosquitto');
  const mosquittoPasswd = requireBin('mosquitto_passwd');
  const username = opts.username ?? 'hearth';
  const password = opts.password ?? 'Tr0ub4dor-s3cret';

  const dir = mkdtempSync(path.join(tmpdir(), 'hearth-mosquitto-tls-'));
  const cleanupDir = trackTempDir(dir);

  let child: ChildProcess | undefined;
  try {
    const pki = makePki(dir);
    const passwdFile = path.join(dir, 'passwd');
    run(mosquittoPasswd, ['-b', '-c', passwdFile, username, password], dir);
    const wsBind = loopbackInterface() ?? HOST;

    // A port grabbed by someone else between freePort() and mosquitto's bind
    // makes mosquitto exit at startup; try again with fresh ports.
    for (let attempt = 1; ; attempt++) {
      const [mqttPort, wsPort, tlsPort, mtlsPort] = await distinctFreePorts(4);
      const tls = [`cafile ${pki.ca}`, `certfile ${pki.serverCert}`, `keyfile ${pki.serverKey}`];
      const lines = [
        'per_listener_settings true',
        'persistence false',
        'log_dest stderr',
        'log_type error',
        'log_type warning',
        'log_type notice',
        'log_type information',
        ...(typeof process.getuid === 'function' && process.getuid() === 0 ? ['user root'] : []),
        '',
        `listener ${mqttPort} ${HOST}`,
        'allow_anonymous false',
        `password_file ${passwdFile}`,
        '',
        `listener ${wsPort} ${wsBind}`,
        'protocol websockets',
        'allow_anonymous true',
        '',
        `listener ${tlsPort} ${HOST}`,
        'allow_anonymous true',
        ...tls,
        '',
        `listener ${mtlsPort} ${HOST}`,
        'allow_anonymous true',
        ...tls,
        'require_certificate true',
      ];
      const confFile = path.join(dir, 'mosquitto.conf');
      writeFileSync(confFile, `${lines.join('\n')}\n`);
      const ports = { mqtt: mqttPort, ws: wsPort, tls: tlsPort, mtls: mtlsPort };

      const busy = (await Promise.all(Object.values(ports).map(tryConnect))).some(Boolean);
      if (busy) {
        if (attempt >= 3) throw new Error('mosquitto: could not find four free ports');
        continue;
      }

      let running: Awaited<ReturnType<typeof launchMosquitto>>;
      try {
        running = await launchMosquitto(mosquitto, confFile, Object.values(ports), START_TIMEOUT_MS);
      } catch (err) {
        // A port grabbed between choosing and binding it: try again with fresh ports.
        if (err instanceof MosquittoExited && attempt < 3) continue;
        throw err;
      }
      const proc = running.proc;
      child = proc;

      let stopped = false;
      return {
        dir,
        pki,
        username,
        password,
        ports,
        urls: {
          mqtt: `mqtt://${HOST}:${mqttPort}`,
          ws: `ws://${HOST}:${wsPort}`,
          tls: `mqtts://${HOST}:${tlsPort}`,
          mtls: `mqtts://${HOST}:${mtlsPort}`,
        },
        log: running.log,
        async stop(): Promise<void> {
          if (stopped) return;
          stopped = true;
          await terminate(proc);
          cleanupDir();
        },
      };
    }
  } catch (err) {
    if (child) await terminate(child);
    cleanupDir();
    throw err;
  }
}
