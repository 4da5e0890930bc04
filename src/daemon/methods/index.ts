// The control endpoint's methods: each answers with data from the daemon's one Hearth. Params are checked against
// src/daemon/schema.ts before a method runs, so a method sees only what the schema allows.
import { PassThrough } from 'node:stream';
import type { Socket } from 'node:net';
import type { Hearth } from '../../hearth.js';
import type { Logger } from '../../log.js';
import { MemoryStore } from '../../agent/memory.js';
import { callerPrincipal } from '../caller.js';
import type { ControlMethod, ControlStream } from '../control-server.js';
import { homeOf } from '../home.js';
import { PROTOCOL_VERSION } from '../protocol.js';
import type {
  AddRuleParams,
  Answers,
  CallParams,
  ChatParams,
  HomeAreaParams,
  HomeDeviceParams,
  HomeEntityParams,
  HomeFloorParams,
  MethodName,
  PolicyTestParams,
  TailParams,
} from '../schema.js';
import { approvals, decide } from './approvals.js';
import { auditTail } from './audit.js';
import { call } from './call.js';
import { openChat } from './chat.js';
import { refusedClaimsJson } from '../../present/refused-claim.js';
import { confirmMove, devices, forgetDevice, sources } from './devices.js';
import { homeArea, homeDevice, homeDevices, homeAreas, homeEntity, homeExport, homeFloor, homeFloors, homeImport } from './home.js';
import { forgetMemory, listMemory } from './memory.js';
import { addRule, listRules, removeRule, roles, testPolicy } from './policy.js';
import { createToken, listTokens, revokeToken } from './tokens.js';
import { tools, toolsStats } from './tools.js';

type P = Record<string, unknown>;
type Methods = { [M in Exclude<MethodName, 'chat' | 'mcp'>]: (params: P) => Promise<Answers[M]> | Answers[M] };

export function controlMethods(hearth: Hearth, info: { version: string }): Record<string, ControlMethod> {
  const tokenContext = { tokens: hearth.tokens, policy: hearth.policy, db: hearth.db };
  let memory: MemoryStore | undefined;
  const methods: Methods = {
    hello: () => ({
      name: 'hearth',
      version: info.version,
      protocol: PROTOCOL_VERSION,
      pid: process.pid,
      database: hearth.bridge.config.database.path,
      home: homeOf(hearth.bridge),
    }),
    devices: () => devices(hearth.bridge),
    'devices.refused': () => refusedClaimsJson(hearth.bridge),
    'devices.forget': (p) => forgetDevice(hearth.bridge, p as { device: string }),
    'devices.confirm-move': (p) => confirmMove(hearth.bridge, p as { device: string; to?: string }),
    sources: () => sources(hearth.bridge),
    tools: (p) => tools(hearth, p),
    'tools.stats': () => toolsStats(hearth),
    call: (p) => call(hearth, p as unknown as CallParams),
    approvals: (p) => approvals(hearth.approvals, p),
    approve: (p) => decide(hearth.approvals, 'approve', p as { id: string }),
    deny: (p) => decide(hearth.approvals, 'deny', p as { id: string }),
    'audit.tail': (p) => auditTail(hearth.audit, p as TailParams),
    'token.create': (p) => createToken(tokenContext, p as { name: string }),
    'token.list': () => listTokens(tokenContext),
    'token.revoke': (p) => revokeToken(tokenContext, p as { name: string }),
    'memory.list': (p) => listMemory((memory ??= new MemoryStore(hearth.db)), p),
    'memory.forget': (p) => forgetMemory((memory ??= new MemoryStore(hearth.db)), p),
    'policy.list': () => listRules(hearth),
    'policy.add': (p) => addRule(hearth, p as unknown as AddRuleParams),
    'policy.remove': (p) => removeRule(hearth, p as { id: number }),
    'policy.roles': (p) => roles(hearth, p),
    'policy.test': (p) => testPolicy(hearth, p as unknown as PolicyTestParams),
    'home.devices': () => homeDevices(hearth),
    'home.areas': () => homeAreas(hearth),
    'home.floors': () => homeFloors(hearth),
    'home.device': (p) => homeDevice(hearth.home, p as unknown as HomeDeviceParams),
    'home.entity': (p) => homeEntity(hearth.home, p as unknown as HomeEntityParams),
    'home.area': (p) => homeArea(hearth.home, p as unknown as HomeAreaParams),
    'home.floor': (p) => homeFloor(hearth.home, p as unknown as HomeFloorParams),
    'home.export': () => homeExport(hearth),
    'home.import': (p) => homeImport(hearth, p as { text: string }),
  };
  return methods;
}

/** Methods that take the connection over after answering: MCP over the socket, and the chat. */
export function controlStreams(hearth: Hearth, log: Logger): Record<string, ControlStream> {
  return {
    mcp: async (params: P) => {
      const p = params as { as?: string; role?: string[]; setup?: boolean };
      const { serveStdio } = await import('../../mcp/stdio.js');
      const rolesOf = (id: string) => hearth.policy.rolesOf(id);
      const principal = callerPrincipal(rolesOf, p.as, p.role);
      // Roles are looked up at each request, so `hearth policy` changes apply without a restart.
      const who = () => (p.as && !p.role ? callerPrincipal(rolesOf, p.as) : principal);
      return {
        answer: { streaming: 'mcp' } satisfies Answers['mcp'],
        run: async (socket: Socket, leftover: Buffer) => {
          const input = new PassThrough();
          if (leftover.length) input.write(leftover);
          socket.pipe(input);
          const serving = await serveStdio({
            hearth,
            principal: who,
            log: log.child({ part: 'mcp', principal: principal.id }),
            stdin: input,
            stdout: socket,
            setup: p.setup,
          });
          socket.once('close', () => void serving.close());
          void serving.closed.then(() => socket.end());
        },
      };
    },
    chat: async (params: P) => {
      const chat = await openChat(hearth, params as ChatParams);
      return {
        answer: chat.hello,
        run: async (socket: Socket, leftover: Buffer) => {
          const input = new PassThrough();
          if (leftover.length) input.write(leftover);
          socket.pipe(input);
          try {
            await chat.serve(input, socket);
          } catch (err) {
            log.warn({ err }, 'chat over the control socket failed');
            socket.destroy();
          }
        },
      };
    },
  };
}
