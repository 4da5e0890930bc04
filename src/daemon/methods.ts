// What the control endpoint answers: each method runs the same function the
// command runs on its own (src/cli/<command>.ts), on the daemon's one Hearth.
import { createHash } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { HearthConfig } from '../config/schema.js';
import type { Socket } from 'node:net';
import { demoEnabled, type Bridge } from '../bridge.js';
import type { Hearth } from '../hearth.js';
import { redact } from '../mqtt/connection.js';
import type { Logger } from '../log.js';
import { ControlError, INVALID_PARAMS } from './protocol.js';
import type { ControlMethod, ControlStream } from './control-server.js';

type Params = Record<string, unknown>;

/** What makes a home this one: where its devices come from and which broker. A client that asks for another runs on its own. */
export interface HomeShape {
  devices: string[];
  broker: string;
  demo: boolean;
  /** A digest of each setting section that changes answers (no secrets leave the daemon). */
  sections: Record<string, string>;
}

/** The setting sections besides broker, devices and demo whose values change what a command answers. */
export const ANSWER_SECTIONS = ['discovery', 'audit', 'tools', 'agent'] as const;

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

export function sectionDigests(config: HearthConfig): Record<string, string> {
  return Object.fromEntries(ANSWER_SECTIONS.map((k) => [k, createHash('sha256').update(canonical(config[k])).digest('hex').slice(0, 16)]));
}

export function homeOf(bridge: Bridge): HomeShape {
  return { devices: bridge.paths, broker: redact(bridge.connection.options.url), demo: demoEnabled(bridge.config), sections: sectionDigests(bridge.config) };
}

/** Params are checked here, so a bad request gets an answer naming the field, not a crash. */
function allowed(method: string, params: Params, fields: Record<string, 'string' | 'boolean' | 'object' | 'string[]'>, required: string[] = []): void {
  for (const key of Object.keys(params)) {
    if (!(key in fields)) throw new ControlError(INVALID_PARAMS, `${method}: unknown param "${key}" (known: ${Object.keys(fields).join(', ') || 'none'})`);
  }
  for (const key of required) {
    if (params[key] === undefined) throw new ControlError(INVALID_PARAMS, `${method}: param "${key}" is required`);
  }
  for (const [key, type] of Object.entries(fields)) {
    const v = params[key];
    if (v === undefined || v === null) continue;
    const ok =
      type === 'string[]'
        ? Array.isArray(v) && v.every((x) => typeof x === 'string')
        : type === 'object'
          ? typeof v === 'object' && !Array.isArray(v)
          : typeof v === type;
    if (!ok)
      throw new ControlError(
        INVALID_PARAMS,
        `${method}: param "${key}" must be ${type === 'string[]' ? 'an array of strings' : `a${type === 'object' ? 'n' : ''} ${type}`}`,
      );
  }
}

/** Drop nulls a JSON client may send for "not given". */
function given<T extends Params>(params: Params): T {
  return Object.fromEntries(Object.entries(params).filter(([, v]) => v !== null && v !== undefined)) as T;
}

export function controlMethods(hearth: Hearth, info: { version: string }): Record<string, ControlMethod> {
  const token = async (method: 'token.create' | 'token.list' | 'token.revoke', params: Params) => {
    const { tokenOutput } = await import('../cli/token.js');
    return tokenOutput({ tokens: hearth.tokens, policy: hearth.policy, db: hearth.db }, method, given(params));
  };
  let memoryStore: import('../agent/memory.js').MemoryStore | undefined;
  const memory = async (method: 'memory.list' | 'memory.forget', params: Params) => {
    const { MemoryStore } = await import('../agent/memory.js');
    const { memoryOutput } = await import('../cli/memory.js');
    memoryStore ??= new MemoryStore(hearth.db);
    return memoryOutput(memoryStore, method, given(params));
  };
  return {
    hello: () => ({ name: 'hearth', version: info.version, pid: process.pid, database: hearth.bridge.config.database.path, home: homeOf(hearth.bridge) }),
    devices: async (params) => {
      allowed('devices', params, { json: 'boolean' });
      const { devicesOutput } = await import('../cli/devices.js');
      return devicesOutput(hearth.bridge, given(params));
    },
    tools: async (params) => {
      allowed('tools', params, { json: 'boolean', stats: 'boolean', as: 'string' });
      const { toolsOutput } = await import('../cli/tools.js');
      return toolsOutput(hearth, given(params));
    },
    call: async (params) => {
      allowed('call', params, { tool: 'string', args: 'object', as: 'string', role: 'string[]', json: 'boolean', imageOut: 'string' }, ['tool']);
      const { callOutput } = await import('../cli/call.js');
      const p = given<{ tool: string; args?: Record<string, unknown> }>(params);
      return callOutput(hearth, { ...p, args: p.args ?? {} });
    },
    approvals: async (params) => {
      allowed('approvals', params, { all: 'boolean', json: 'boolean' });
      const { approvalsOutput } = await import('../cli/approvals.js');
      return approvalsOutput(hearth.approvals, given(params));
    },
    approve: async (params) => {
      allowed('approve', params, { id: 'string', by: 'string', verb: 'string' }, ['id']);
      const { decideOutput } = await import('../cli/approvals.js');
      return decideOutput(hearth.approvals, { ...given<{ id: string; by?: string }>(params), verb: 'approve' });
    },
    deny: async (params) => {
      allowed('deny', params, { id: 'string', by: 'string', verb: 'string' }, ['id']);
      const { decideOutput } = await import('../cli/approvals.js');
      return decideOutput(hearth.approvals, { ...given<{ id: string; by?: string }>(params), verb: 'deny' });
    },
    'audit.tail': async (params) => {
      allowed('audit.tail', params, { lines: 'string', json: 'boolean', principal: 'string', entity: 'string', outcome: 'string', since: 'string' });
      const { tailOutput } = await import('../cli/audit.js');
      const { OUTCOMES } = await import('../audit/row.js');
      if (params.outcome !== undefined && !(OUTCOMES as readonly unknown[]).includes(params.outcome)) {
        throw new ControlError(INVALID_PARAMS, `audit.tail: param "outcome" must be one of ${OUTCOMES.join(', ')}`);
      }
      const p = given<{ lines?: string; outcome?: never }>(params);
      return tailOutput(hearth.audit, hearth.bridge.config.database.path, { ...p, lines: p.lines ?? '20' });
    },
    'token.create': async (params) => {
      allowed('token.create', params, { name: 'string', role: 'string[]', principal: 'string', area: 'string', json: 'boolean' }, ['name']);
      return token('token.create', params);
    },
    'token.list': async (params) => {
      allowed('token.list', params, { json: 'boolean' });
      return token('token.list', params);
    },
    'token.revoke': async (params) => {
      allowed('token.revoke', params, { name: 'string' }, ['name']);
      return token('token.revoke', params);
    },
    'memory.list': async (params) => {
      allowed('memory.list', params, { principal: 'string', limit: 'string', json: 'boolean' });
      return memory('memory.list', params);
    },
    'memory.forget': async (params) => {
      allowed('memory.forget', params, { principal: 'string', id: 'string', all: 'boolean', json: 'boolean' });
      return memory('memory.forget', params);
    },
    'policy.list': async (params) => {
      allowed('policy.list', params, { json: 'boolean' });
      const { policyListOutput } = await import('../cli/policy.js');
      return policyListOutput(hearth, given(params));
    },
    'policy.add': async (params) => {
      const text = {
        effect: 'string',
        subject: 'string',
        tool: 'string',
        entity: 'string',
        area: 'string',
        kind: 'string',
        deviceClass: 'string',
        capability: 'string',
        action: 'string',
        priority: 'string',
        window: 'string',
        days: 'string',
        maxCalls: 'string',
        per: 'string',
        note: 'string',
        fromArea: 'string',
        json: 'boolean',
      } as const;
      allowed('policy.add', params, text, ['effect', 'subject', 'action']);
      if (!['allow', 'deny', 'confirm'].includes(params.effect as string)) {
        throw new ControlError(INVALID_PARAMS, 'policy.add: param "effect" must be one of allow, deny, confirm');
      }
      const { policyAddOutput } = await import('../cli/policy.js');
      const { effect, subject, ...rest } = given<{ effect: 'allow' | 'deny' | 'confirm'; subject: string; action: string }>(params);
      return policyAddOutput(hearth, effect, subject, rest);
    },
    'policy.remove': async (params) => {
      allowed('policy.remove', params, { id: 'string' }, ['id']);
      const { policyRemoveOutput } = await import('../cli/policy.js');
      return policyRemoveOutput(hearth, given<{ id: string }>(params));
    },
    'policy.roles': async (params) => {
      allowed('policy.roles', params, { principal: 'string', roles: 'string[]', clear: 'boolean' });
      const { policyRolesOutput } = await import('../cli/policy.js');
      return policyRolesOutput(hearth, given(params));
    },
    'policy.test': async (params) => {
      allowed(
        'policy.test',
        params,
        { principal: 'string', tool: 'string', args: 'string', role: 'string[]', at: 'string', fromArea: 'string', json: 'boolean' },
        ['principal', 'tool'],
      );
      const { policyTestOutput } = await import('../cli/policy.js');
      return policyTestOutput(hearth, given<{ principal: string; tool: string }>(params));
    },
  };
}

/** `hearth mcp` through the daemon: the connection becomes an MCP stdio session for the caller's principal. */
export function controlStreams(hearth: Hearth, log: Logger): Record<string, ControlStream> {
  return {
    mcp: async (params: Params) => {
      allowed('mcp', params, { as: 'string', role: 'string[]' });
      const p = given<{ as?: string; role?: string[] }>(params);
      const { cliPrincipal } = await import('../cli/principal.js');
      const { serveStdio } = await import('../mcp/stdio.js');
      const principal = cliPrincipal(hearth, p.as, p.role);
      // Roles are looked up at each request, so `hearth policy` changes apply without a restart.
      const who = () => (p.as && !p.role ? cliPrincipal(hearth, p.as) : principal);
      return async (socket: Socket, leftover: Buffer) => {
        const input = new PassThrough();
        if (leftover.length) input.write(leftover);
        socket.pipe(input);
        const serving = await serveStdio({ hearth, principal: who, log: log.child({ part: 'mcp', principal: principal.id }), stdin: input, stdout: socket });
        socket.once('close', () => void serving.close());
        void serving.closed.then(() => socket.end());
      };
    },
    chat: async (params: Params) => {
      allowed('chat', params, { as: 'string', ask: 'boolean', ephemeral: 'boolean', session: 'string', tty: 'boolean' });
      const p = given<{ as?: string }>(params);
      const { cliPrincipal } = await import('../cli/principal.js');
      const { runChat } = await import('../cli/chat.js');
      cliPrincipal(hearth, p.as); // a bad --as is the answer, before the chat starts
      return async (socket: Socket, leftover: Buffer) => {
        const input = new PassThrough();
        let interrupt: (() => void) | undefined;
        // Lines go to the chat; an ETX byte is the client's Ctrl+C: the chat's own interrupt (the turn, or the chat when idle).
        const feed = (chunk: Buffer) => {
          for (let at = chunk.indexOf(3); at !== -1; at = chunk.indexOf(3)) {
            if (at > 0) input.write(chunk.subarray(0, at));
            interrupt?.();
            chunk = chunk.subarray(at + 1);
          }
          if (chunk.length) input.write(chunk);
        };
        if (leftover.length) feed(leftover);
        socket.on('data', feed);
        socket.once('end', () => input.end());
        // The person left (the client is gone): stop the turn, end the chat.
        socket.once('close', () => interrupt?.());
        try {
          await runChat(hearth, p, { input, output: socket, terminal: false, onInterrupt: (h) => (interrupt = h) });
        } catch (err) {
          // Said to the person, as the command on its own would.
          log.warn({ err }, 'chat over the control socket failed');
          if (socket.writable) socket.write(`hearth: ${(err as Error).message}\n`);
        }
        socket.end();
      };
    },
  };
}
