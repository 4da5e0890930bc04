// Where a Hearth call's time goes, measured in place (bench/roundtrip.ts for one broker, bench/cluster.ts per
// cluster): the policy decision and the audit commits timed where they run, and the call's timeline from MQTT.js's
// own packet events (when the PUBLISH was written, when the echo was parsed). Wraps the methods of one Hearth.
import type { Hearth } from '../../src/hearth.js';
import { nowNs } from './harness.js';

export interface CallTiming {
  /**
   * CPU ms of this process spent inside each stage, summed since the last `cpuReset()` (synchronous work
   * only: what a stage's Promise waits for is not in it). CPU time, not wall: a busy machine hardly moves it.
   */
  cpu: Record<string, number>;
  /** The CPU stages' labels, in the order a call meets them. */
  cpuLabels: readonly string[];
  cpuReset(): void;
  /** ms per call of each timed stage. */
  stages: Record<string, number[]>;
  /** ms per call of each step of the call's timeline. */
  timeline: Record<string, number[]>;
  /** Around each measured call: `start()` just before it, `end()` just after its result. */
  start(): void;
  end(): void;
  /**
   * Whether the stages are timed (true at first). Timing costs the call: two process.cpuUsage() (a getrusage
   * syscall each) around every wrapped method, ~0.15 ms a round trip and ~4 ms a 50-light scene on this machine;
   * rounds whose times make a TARGET run with it off, and the breakdown is taken in rounds of its own.
   */
  enabled: boolean;
}

/** `commit` names what the pending row's commit is (the audit durability in words). */
export function timeCalls(hearth: Hearth, commit: string): CallTiming {
  const state = { enabled: true };
  const stages: Record<string, number[]> = {
    'policy.decide()': [],
    [`audit.beginDurable() (${commit})`]: [],
    'audit outcomes, after the result (commit to the WAL)': [],
  };
  const timeStage = (obj: object, method: string, label: string) => {
    const target = obj as Record<string, (...a: unknown[]) => unknown>;
    const fn = target[method]!.bind(obj);
    target[method] = (...a: unknown[]) => {
      if (!state.enabled) return fn(...a);
      const s0 = nowNs();
      const took = () => stages[label]!.push(Number(nowNs() - s0) / 1e6);
      let out: unknown;
      try {
        out = fn(...a);
      } catch (err) {
        took();
        throw err;
      }
      if (out instanceof Promise) out.then(took, took);
      else took();
      return out;
    };
  };
  // The call's timeline, in place: when the pending row was asked for and granted, when MQTT.js wrote the
  // PUBLISH and parsed the echo (its own packet events), and when the result came back.
  // CPU per stage: decode + cache + echo matching (the state cache's handle() and its change listeners, where the
  // waiting call finds its echo), the audit's synchronous work (the pending row's group commit and fsync run in
  // runGroup; outcomes in appendOutcomes), the policy and the publish handed to MQTT.js.
  let cpu: Record<string, number> = {};
  const cpuNow = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const cpuLabels: string[] = [];
  const cpuStage = (obj: object, method: string, label: string) => {
    cpuLabels.push(label);
    const target = obj as Record<string, (...a: unknown[]) => unknown>;
    const fn = target[method]!;
    target[method] = function (this: unknown, ...a: unknown[]) {
      if (!state.enabled) return fn.apply(this, a);
      const c0 = cpuNow();
      try {
        return fn.apply(this, a);
      } finally {
        cpu[label] = (cpu[label] ?? 0) + cpuNow() - c0;
      }
    };
  };
  const ms = () => Number(nowNs()) / 1e6;
  const mark = { start: 0, begin: 0, begun: 0, sent: 0, echo: 0 };
  const timeline: Record<string, number[]> = {
    'validation, policy, queue': [],
    'beginDurable()': [],
    'granted -> PUBLISH written': [],
    'written -> echo parsed': [],
    'echo -> result': [],
  };
  const audit = hearth.audit as unknown as Record<string, (...a: unknown[]) => Promise<number>>;
  const begin = audit.beginDurable!.bind(hearth.audit);
  audit.beginDurable = (...a: unknown[]) => {
    if (!state.enabled) return begin(...a);
    mark.begin = ms();
    return begin(...a).then((id) => {
      mark.begun = ms();
      return id;
    });
  };
  const client = hearth.bridge.connection.client;
  client.on('packetsend', (p) => {
    if (state.enabled && p.cmd === 'publish') mark.sent = ms();
  });
  client.on('packetreceive', (p) => {
    if (state.enabled && p.cmd === 'publish') mark.echo = ms();
  });
  timeStage(hearth.policy, 'decide', 'policy.decide()');
  // In the order a call meets them (cpuLabels keeps it for printing).
  // A grouped call's members, judged at once: read checks, arguments, decisions, what would be sent.
  cpuStage(hearth.policy, 'atOnce', 'the members of a grouped call judged (policy.atOnce: read checks, arguments, decisions, what is sent)');
  cpuStage(hearth.policy, 'decide', 'policy.decide()');
  cpuStage(hearth.audit, 'runGroup', 'audit: pending rows, commit + fsync (runGroup)');
  cpuStage(hearth.bridge.connection, 'publish', 'publish (connection.publish)');
  cpuStage(hearth.bridge.cache, 'handle', 'decode, cache, echo matching (cache.handle)');
  cpuStage(hearth.audit, 'appendOutcomes', 'audit: outcomes (appendOutcomes)');
  // Inside the outcomes' stage, every INDEX_BATCH entries: the readers' call index follows the log.
  cpuStage(hearth.audit, 'indexCalls', "of which the readers' call index copy (indexCalls)");
  timeStage(hearth.audit, 'beginDurable', `audit.beginDurable() (${commit})`);
  timeStage(hearth.audit, 'appendOutcomes', 'audit outcomes, after the result (commit to the WAL)');
  return {
    stages,
    timeline,
    cpuLabels,
    get cpu() {
      return cpu;
    },
    cpuReset() {
      cpu = {};
    },
    get enabled() {
      return state.enabled;
    },
    set enabled(on: boolean) {
      state.enabled = on;
    },
    start() {
      mark.start = ms();
    },
    end() {
      if (!state.enabled) return;
      const end = ms();
      timeline['validation, policy, queue']!.push(mark.begin - mark.start);
      timeline['beginDurable()']!.push(mark.begun - mark.begin);
      timeline['granted -> PUBLISH written']!.push(mark.sent - mark.begun);
      timeline['written -> echo parsed']!.push(mark.echo - mark.sent);
      timeline['echo -> result']!.push(end - mark.echo);
    },
  };
}
