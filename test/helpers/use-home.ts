// A test file's demo home (see home.ts) on its own broker, started before the file's tests and closed after
// them, with a plain MQTT client on the same broker for the test to publish as a device would. A test then
// says only what it checks: `const home = useHome();` and `home.hearth`, `home.device`, `home.broker` in its tests.
import { after, afterEach, before, beforeEach } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { startAedes, type TestBroker } from './brokers.js';
import { type HomeOptions, startHome, type TestHome } from './home.js';

export interface UseHomeOptions extends HomeOptions {
  /** Which broker to start (aedes unless told). */
  broker?: () => Promise<TestBroker>;
  /** More settings, read when the home starts (for what is known only then, such as a model's address). */
  settings?: () => Record<string, string>;
  /** A home of its own for each test (beforeEach/afterEach), for tests that break what they are given. */
  eachTest?: boolean;
}

export interface HomeInTest extends TestHome {
  broker: TestBroker;
  /** A plain MQTT client on the broker (MQTT 3.1.1), closed with the home. */
  device: MqttClient;
  /** Runs `fn` after the file's tests, before the home closes (the last registered first). */
  cleanup(fn: () => unknown): void;
}

/** `value`, or an error saying it is only there once the file's before() hooks have run. */
export function started<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`${what} is started in before(): use it inside a test or a hook`);
  return value;
}

/** Starts the home in a before() hook of the enclosing describe (or file) and closes it in an after() hook (or each for each test). */
export function useHome(options: UseHomeOptions = {}): HomeInTest {
  let broker: TestBroker | undefined;
  let home: TestHome | undefined;
  let device: MqttClient | undefined;
  const cleanups: Array<() => unknown> = [];
  const [setUp, tearDown] = options.eachTest ? [beforeEach, afterEach] : [before, after];
  setUp(async () => {
    broker = await (options.broker ?? startAedes)();
    home = await startHome(broker, options.settings ? { ...options, extraSettings: { ...options.extraSettings, ...options.settings() } } : options);
    device = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
  });
  tearDown(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn();
    await device?.endAsync(true).catch(() => undefined);
    await home?.close();
    await broker?.stop();
  });
  const h = () => started(home, 'the home');
  return {
    get broker() {
      return started(broker, 'the broker');
    },
    get device() {
      return started(device, 'the device client');
    },
    get hearth() {
      return h().hearth;
    },
    get sim() {
      return h().sim;
    },
    get dir() {
      return h().dir;
    },
    get seen() {
      return h().seen;
    },
    get logs() {
      return h().logs;
    },
    commands: () => h().commands(),
    caughtUp: () => h().caughtUp(),
    close: () => h().close(),
    cleanup: (fn) => void cleanups.push(fn),
  };
}
