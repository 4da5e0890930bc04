// Hearth assembled: the bridge (broker, devices, state), the SQLite database
// with policy, approvals and audit, the one handler pipeline and the live tool
// set. Every front door (CLI, agent engine, MCP, HTTP, Node-RED) opens one of these.
import { randomUUID } from 'node:crypto';
import { loadAuditKey, sequenceFileOf } from './audit/key.js';
import { INTERRUPTED_ERROR, SqliteAuditLog } from './audit/store.js';
import { Bridge, DEMO_DEVICES, demoEnabled, type BridgeOptions } from './bridge.js';
import { CommandGate } from './devices/command-gate.js';
import { DEFAULT_CONFIRM_TIMEOUT_MS } from './devices/defaults.js';
import { DeviceIds } from './devices/device-ids.js';
import { SqliteEntityNames } from './devices/entity-names.js';
import { HomeModel } from './devices/home/home-model.js';
import { HomeSetup } from './devices/home/home-setup.js';
import { openDatabase, type Db } from './db/database.js';
import { SqliteApprovals } from './policy/approvals.js';
import { SqlitePolicy } from './policy/engine.js';
import { generateTools, type ToolShape } from './tools/generator.js';
import { Pipeline } from './tools/pipeline.js';
import { ReadAccess } from './tools/read-access.js';
import { ToolSet } from './tools/tool-set.js';
import type { Entity } from './devices/model.js';
import type { GeneratedTool, Principal } from './tools/types.js';
// The agent engine is loaded on first use (chat, agent rpc, HTTP sessions), not by every command.
import type { SessionManager } from './agent/sessions.js';
import { HistoryRecorder } from './history/recorder.js';
import { HistoryStore, historyOptions } from './history/store.js';
import { TokenStore } from './auth/tokens.js';
import { errorOf } from './util/error.js';

export interface HearthOptions extends BridgeOptions {
  /** false: do not connect to a broker at all (listing tools from device files). */
  connect?: boolean;
  /** Record entity history (the long-running daemon: `hearth start`); other processes only read it. */
  recordHistory?: boolean;
}

export const DEMO_RULE_NOTE = 'demo home: owners may control the simulated devices';

export class Hearth {
  private constructor(
    readonly bridge: Bridge,
    readonly db: Db,
    readonly policy: SqlitePolicy,
    readonly approvals: SqliteApprovals,
    readonly audit: SqliteAuditLog,
    readonly pipeline: Pipeline,
    readonly tools: ToolSet,
    /** Entity history (charts, get_history): read through the same read check as state. */
    readonly history: HistoryStore,
    private readonly recorder?: HistoryRecorder,
  ) {}

  static async open(options: HearthOptions): Promise<Hearth> {
    const { config, log } = options;
    const db = openDatabase(config.database.path);
    let bridge: Bridge | undefined;
    let audit: SqliteAuditLog | undefined;
    try {
      const policy = new SqlitePolicy(db);
      const key = config.audit.keyFile ? loadAuditKey(config.audit.keyFile, { create: true }) : undefined;
      if (key?.created) log.info({ keyFile: config.audit.keyFile }, 'audit: made a new audit key; keep it, and a copy, away from the database');
      if (key && !config.audit.digestFile) log.warn('audit.key_file signs the digest file, but audit.digest_file is not set: nothing is signed');
      audit = new SqliteAuditLog(db, {
        log: log.child({ part: 'audit' }),
        digestFile: config.audit.digestFile,
        durability: config.audit.durability,
        ...(key ? { key: key.key, sequenceFile: sequenceFileOf(config.audit.keyFile!) } : {}),
      });
      const approvals = new SqliteApprovals(db, { audit });
      const entityMemory = new SqliteEntityNames(db, log.child({ part: 'devices' }), {
        days: config.discovery.rememberDays,
        max: config.discovery.rememberMax,
      });
      const history = new HistoryStore(db, historyOptions(config.history));
      const deviceIds = new DeviceIds(db, { log: log.child({ part: 'devices' }), max: config.discovery.maxDevices });
      bridge = await Bridge.start({ ...options, offline: options.connect === false, entityMemory, home: new HomeModel(db), deviceIds });
      const recorder = options.recordHistory ? new HistoryRecorder(history, bridge.cache, log.child({ part: 'history' })) : undefined;
      // The read check lives on the Hearth made below; the pipeline asks it late.
      let made: Hearth | undefined;
      const pipeline = new Pipeline({
        history,
        readDenied: (principal, entity) => made?.readDenied(principal, entity),
        auditRows: (filter) => audit!.list(filter),
        explainPolicy: (call, entity, action, forWhom) =>
          made
            ? made.tools.explainFor(call, entity, action, forWhom, { list: () => policy.listPrincipals(), rolesOf: (id) => policy.rolesOf(id) })
            : { text: 'the policy cannot be explained yet', isError: true },
        registry: bridge.registry,
        cache: bridge.cache,
        mqtt: bridge.connection,
        sendWaitMs: config.mqtt.sendWaitMs,
        gate: new CommandGate(bridge.registry, bridge.connection),
        policy,
        approvals,
        audit,
        log: log.child({ part: 'pipeline' }),
      });
      // A grant is checked against what the held call would send now (a moved command topic voids it).
      approvals.sendsNow = (a) => (a.entityId ? pipeline.sendsNow(a.entityId, a.args) : undefined);
      const tools = new ToolSet(bridge.registry, pipeline, policy, config.tools);
      // Calls refused before any handler (unknown tool, bad arguments, a tool not offered) are audited here, for every door.
      tools.audit = audit;
      const reads = new ReadAccess(bridge.registry, policy, () => tools.all());
      tools.mayRead = (principal, entity) => !reads.denied(principal, entity);
      const hearth = new Hearth(bridge, db, policy, approvals, audit, pipeline, tools, history, recorder);
      made = hearth;
      if (demoEnabled(config)) hearth.seedDemoRule();
      return hearth;
    } catch (err) {
      await bridge?.close();
      await audit?.close();
      db.close();
      throw err;
    }
  }

  /**
   * The demo home would be no demo if nothing could be switched: owners may
   * act on the simulated devices (and only those). Unlocking and opening
   * still need approval: the built-in confirm rules outrank this one.
   */
  private seedDemoRule(): void {
    if (this.policy.list().some((r) => r.note === DEMO_RULE_NOTE)) return;
    const ids = this.bridge.registry
      .devices()
      .filter((d) => d.source.startsWith(DEMO_DEVICES))
      .map((d) => `${d.id}.*`);
    if (!ids.length) return;
    this.policy.add({
      subject: 'role:owner',
      targetType: 'entity',
      target: ids.join('|'),
      action: 'actuate',
      effect: 'allow',
      priority: 0,
      note: DEMO_RULE_NOTE,
    });
  }

  /**
   * Calls a crash left pending become `interrupted`. A pending row may belong
   * to a call still running in another process (hearth call), so only rows
   * older than their device's confirmation timeout are taken as dead.
   */
  sweepPending(now = Date.now()): number {
    let marked = 0;
    const fallback = Math.max(...Object.values(DEFAULT_CONFIRM_TIMEOUT_MS));
    for (const row of this.audit.list({ outcome: 'pending', limit: 10_000 })) {
      const entity = row.entityId ? this.bridge.registry.entity(row.entityId) : undefined;
      const timeout = entity ? (entity.confirmTimeoutMs ?? DEFAULT_CONFIRM_TIMEOUT_MS[entity.kind]) : fallback;
      if (now - Date.parse(row.at) <= timeout + 1000) continue;
      try {
        this.audit.finish(row.id, { outcome: 'interrupted', error: INTERRUPTED_ERROR });
        marked++;
        // Then a later report of the asked state is appended to it ("confirmed late").
        this.pipeline.reconcileInterrupted(row);
      } catch (err) {
        this.bridge.log.error({ err: errorOf(err), auditId: row.id }, 'could not mark a pending audit row interrupted');
      }
    }
    if (marked) this.bridge.log.warn({ interrupted: marked }, 'audit: calls left pending by a stopped process marked interrupted');
    return marked;
  }

  /** On start: sweep pending rows and check the chain (and whether a signed digest vouches for every entry). */
  recoverAudit(): { interrupted: number; chainOk: boolean; problem?: string; unvouched?: { from: number; to: number; count: number } } {
    const interrupted = this.sweepPending();
    let result = this.audit.verify();
    if (result.firstBroken?.kind === 'index') {
      // The log verifies and the index derived from it does not match it: said, then rebuilt from the log.
      this.bridge.log.error(
        { firstBroken: result.firstBroken },
        "audit: the readers' call index did not match the log (edited, or written by a faulty process); rebuilt from the log",
      );
      this.audit.rebuildIndex();
      result = this.audit.verify();
    }
    if (!result.ok) this.bridge.log.error({ firstBroken: result.firstBroken }, 'audit chain does not verify: run `hearth audit verify`');
    return { interrupted, chainOk: result.ok, problem: result.firstBroken?.reason, ...(result.unvouched ? { unvouched: result.unvouched } : {}) };
  }

  private homeSetup?: HomeSetup;

  /** Areas, floors and people's choices for devices: what every door's setters call. */
  get home(): HomeSetup {
    this.homeSetup ??= new HomeSetup(this.bridge.registry);
    return this.homeSetup;
  }

  private agentPromise?: Promise<SessionManager>;
  private tokenStore?: TokenStore;
  private readAccess?: ReadAccess;

  /** The one read check (see ReadAccess): every surface that shows state asks it. */
  get reads(): ReadAccess {
    this.readAccess ??= new ReadAccess(this.bridge.registry, this.policy, () => this.tools.all());
    return this.readAccess;
  }

  /** Why this principal may not read this entity, or undefined when it may. */
  readDenied(principal: Principal, entity: Entity): string | undefined {
    return this.reads.denied(principal, entity);
  }

  /**
   * The entity with this id when this principal may read it; otherwise undefined, as for an id that does not exist
   * (a surface then answers the same for both, so a caller learns nothing of what it may not read), and a refused
   * read is recorded in the audit as a read tool records one. `surface` names where it was asked (`GET /api/history`).
   */
  readableEntity(principal: Principal, id: string, surface: string): Entity | undefined {
    const entity = this.bridge.registry.entity(id);
    if (!entity) return undefined;
    const decision = this.reads.decision(principal, entity);
    if (decision.effect === 'allow') return entity;
    try {
      this.audit.record(
        {
          requestId: `read:${randomUUID()}`,
          principal: principal.id,
          session: null,
          runId: null,
          tool: surface,
          entityId: entity.id,
          action: 'read',
          args: {},
          decision: decision.effect,
          ruleId: decision.ruleId,
          reason: decision.reason + (principal.area ? ` [from area ${JSON.stringify(principal.area)}]` : ''),
        },
        { outcome: 'denied', error: `not allowed: ${decision.reason}` },
      );
    } catch (err) {
      this.bridge.log.error({ err: errorOf(err), entity: entity.id, surface }, 'the audit row of a refused read could not be written');
    }
    return undefined;
  }

  /** The history recorder, when this process records (tests read its counters). */
  get historyRecorder(): HistoryRecorder | undefined {
    return this.recorder;
  }

  /** The entities this principal may read. */
  visibleEntities(principal: Principal): Entity[] {
    return this.reads.visible(principal);
  }

  /** The entities this principal may read that agents are shown (Entity.exposed): what an agent's door lists. */
  agentEntities(principal: Principal): Entity[] {
    return this.reads.visible(principal).filter((e) => e.exposed !== false);
  }

  /** The agent (engine + sessions), started on first use. */
  agent(): Promise<SessionManager> {
    this.agentPromise ??= (async () => {
      const [{ createEngine }, { SessionManager }] = await Promise.all([import('./agent/factory.js'), import('./agent/sessions.js')]);
      return new SessionManager(await createEngine(this), this.tools);
    })();
    return this.agentPromise;
  }

  get tokens(): TokenStore {
    this.tokenStore ??= new TokenStore(this.db);
    return this.tokenStore;
  }

  /** The tool set in a given shape, for statistics. */
  toolsInShape(shape: ToolShape): GeneratedTool[] {
    const registry = this.bridge.registry;
    return generateTools(registry.exposed(), { ...this.bridge.config.tools, shape, names: registry.memory }, this.pipeline.invoke).tools;
  }

  async close(): Promise<void> {
    if (this.agentPromise) {
      const agent = await this.agentPromise.catch(() => undefined);
      await agent?.closeAll();
      await agent?.engine.close();
    }
    this.recorder?.close();
    await this.bridge.close();
    await this.audit.close();
    this.db.close();
  }
}
