// The `chat` stream: a conversation with the home as data. The client sends what the person typed and how they
// answered a permission request; the daemon runs the turns on one agent session and sends each event as it
// comes. The same code serves a command line with no daemon (over an in-process pair of streams).
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { TurnActiveError } from '../../agent/types.js';
import type { Hearth } from '../../hearth.js';
import { callerPrincipal } from '../caller.js';
import { ControlError, INTERNAL_ERROR } from '../protocol.js';
import { MAX_CHAT_LINE, type Answers, type ChatClientMessage, type ChatParams, type ChatServerMessage } from '../schema.js';

export interface OpenChat {
  hello: Answers['chat'];
  /** Serve the conversation until the client says bye or its input ends. */
  serve(input: Readable, output: Writable): Promise<void>;
}

function parse(line: string): ChatClientMessage | string {
  if (line.length > MAX_CHAT_LINE) return `a line is at most ${MAX_CHAT_LINE} characters`;
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return 'each line is a JSON object: {"say":"..."}, {"permission":{"requestId":"...","decision":"allow_once"}}, {"interrupt":true} or {"bye":true}';
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return 'a line is a JSON object';
  const m = v as Record<string, unknown>;
  if (typeof m.say === 'string') return { say: m.say };
  if (m.interrupt === true) return { interrupt: true };
  if (m.bye === true) return { bye: true };
  const p = m.permission as Record<string, unknown> | undefined;
  if (p && typeof p.requestId === 'string' && ['allow_once', 'allow_always', 'deny'].includes(p.decision as string)) {
    return { permission: { requestId: p.requestId, decision: p.decision as 'allow_once' } };
  }
  return 'unknown message; known: say, permission, interrupt, bye';
}

export async function openChat(hearth: Hearth, p: ChatParams): Promise<OpenChat> {
  const principal = callerPrincipal((id) => hearth.policy.rolesOf(id), p.as);
  if (!hearth.bridge.connection.connected) {
    throw new ControlError(INTERNAL_ERROR, `cannot reach the broker at ${hearth.bridge.connection.options.url}: is \`hearth start\` running?`);
  }
  const agent = await hearth.agent();
  const session = await agent.open({ principal, permissions: 'jan', ephemeral: p.ephemeral, id: p.session });
  const engine = hearth.bridge.config.agent;
  const hello: Answers['chat'] = {
    streaming: 'chat',
    principal: principal.id,
    engine: engine.provider === 'intent' ? 'the offline intent model' : `${engine.model} at ${engine.baseUrl}`,
    tools: session.tools.length,
    session: p.ephemeral ? null : session.id,
    // What `help` offers: made of this home and what this principal may use and read, as "not understood" offers it.
    examples: agent.engine.examples?.(session) ?? [],
  };

  async function serve(input: Readable, output: Writable): Promise<void> {
    const send = (m: ChatServerMessage) => {
      if (output.writable) output.write(`${JSON.stringify(m)}\n`);
    };
    let current: Awaited<ReturnType<typeof agent.prompt>> | undefined;
    let running: Promise<void> | undefined;
    const runTurn = async (text: string) => {
      try {
        current = await agent.prompt(session, text);
      } catch (err) {
        send({ problem: err instanceof TurnActiveError ? 'still answering the last message' : (err as Error).message, unsaid: true });
        return;
      }
      for await (const event of current) {
        if (event.type === 'permission_request') {
          const decision = hearth.tools.preview(event.tool_name.replace(/^host__/, ''), event.args, principal);
          const preview = decision ? { preview: { effect: decision.effect, reason: decision.reason } } : {};
          if (!p.ask && decision?.effect === 'allow') {
            session.respondPermission(event.request_id, 'allow_once');
            send({ event, ...preview, answered: 'allow_once' });
          } else send({ event, ...preview });
        } else send({ event });
      }
      const result = await current.result();
      current = undefined;
      send({ turn: { stopReason: result.stopReason, error: result.error ?? null } });
    };
    const rl = createInterface({ input, crlfDelay: Infinity });
    try {
      for await (const line of rl) {
        if (!line.trim()) continue;
        const m = parse(line);
        if (typeof m === 'string') {
          send({ problem: m });
          continue;
        }
        if ('bye' in m) break;
        if ('interrupt' in m) current?.interrupt();
        else if ('permission' in m) {
          try {
            session.respondPermission(m.permission.requestId, m.permission.decision);
          } catch (err) {
            // Answered too late (the turn was interrupted meanwhile): say so; the chat goes on.
            send({ problem: `that answer came too late: ${(err as Error).message}` });
          }
        } else if (running) send({ problem: 'still answering the last message', unsaid: true });
        else running = runTurn(m.say).finally(() => (running = undefined));
      }
    } finally {
      rl.close();
      // The person left mid-turn: stop it, and wait for its end before saying where the conversation is.
      current?.interrupt();
      await running;
      send({ end: { session: hello.session, saved: !!hello.session } });
      output.end();
    }
  }
  return { hello, serve };
}
