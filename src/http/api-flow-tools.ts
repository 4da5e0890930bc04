// Flow-defined tools over HTTP: a Node-RED flow (hearth-tool on a bridge
// connected to this daemon) provides tools the daemon's agent, CLI, MCP and
// page can call, with the daemon's policy, approvals and audit in front.
//
//   POST /api/flow-tools/providers  {source, tools: [{name, description, parameters, capability, timeoutMs}]}
//     -> 400/403/409 as JSON, or an event stream: `ready` {provider, tools},
//        then `call` {id, tool, args, principal, session, runId, requestId, timeoutMs}
//        and `cancel` {id, tool, reason}. The tools live while the stream does.
//   POST /api/flow-tools/calls/:id/result  {text, details, isError}
//     -> the answer to a call of one of this token's providers (404 otherwise).
//   GET /api/flow-tools  -> the caller's providers (an owner sees all).
//
// Only owners may provide tools: a tool is a way into every session of the home.
import { checkAnswer, checkDefinitions, type FlowToolProvider, FlowToolProviderError, FlowToolProviders, MAX_SOURCE } from '../tools/flow-tool-providers.js';
import type { ToolResultObject } from '../tools/types.js';
import { onlyFields, requiredString } from './body.js';
import { forbidden, HttpError, notFound } from './errors.js';
import { isOwner, type ApiContext, type Route } from './route.js';

function asHttp(err: unknown): unknown {
  if (!(err instanceof FlowToolProviderError)) return err;
  const status = err.code === 'name_taken' ? 409 : err.code === 'too_many' && !err.field ? 429 : 400;
  return new HttpError(status, err.code, err.message, err.field ? { field: err.field } : {});
}

export function flowToolRoutes({ hearth, log, sse }: ApiContext): { routes: Route[]; providers: FlowToolProviders } {
  const providers = new FlowToolProviders(
    hearth.tools.external,
    { policy: hearth.policy, audit: hearth.audit, approvals: hearth.approvals, log: log.child({ part: 'flow-tool' }) },
    (name) => hearth.tools.isDeviceTool(name),
    log.child({ part: 'flow-tools' }),
    // Without a token (auth off, loopback only) the caller is http:local, an owner.
    (holder) => holder.token === undefined || hearth.policy.rolesOf(holder.principal).includes('owner'),
  );
  const routes: Route[] = [
    {
      method: 'GET',
      path: '/api/flow-tools',
      handler: ({ principal, token }) => providers.list({ principal: principal.id, token }, isOwner(principal)),
    },
    {
      method: 'POST',
      path: '/api/flow-tools/providers',
      handler: async ({ principal, token, body, res }) => {
        if (!isOwner(principal))
          throw forbidden(`${principal.id} may not provide tools: only a principal with the owner role may (hearth token create node-red --role owner)`);
        const input = await body();
        onlyFields(input, ['source', 'tools']);
        const source = requiredString(input, 'source', {
          max: MAX_SOURCE,
          pattern: /^[\w.:/-]+$/,
          hint: 'letters, digits and _ . : / -, e.g. flow:<node id>',
        });
        let provider: FlowToolProvider | undefined;
        try {
          const defs = checkDefinitions(input.tools);
          // Registered before the stream opens, so a refusal is still a JSON error; events wait for the stream.
          const queue: Array<{ event: string; data: unknown }> = [];
          let stream: ReturnType<typeof sse.open> | undefined;
          provider = providers.register({ principal: principal.id, token }, source, defs, (e) => {
            if (!stream) return queue.push(e) > 0;
            if (!stream.open) return false;
            stream.send(e.event, e.data);
            return stream.open;
          });
          // Not counted against the event-stream cap (the provider cap holds), but ended if the token is revoked.
          stream = sse.open(res, { principal: principal.id, token, counted: false });
          const opened = stream;
          const p = provider;
          p.end = () => opened.end();
          opened.onClose(() => providers.drop(p, opened.clientGone ? 'the flow disconnected' : 'the stream ended'));
          opened.send('ready', { provider: p.id, source, tools: p.names });
          for (const e of queue.splice(0)) opened.send(e.event, e.data);
          if (!opened.open) providers.drop(p, 'the flow disconnected');
        } catch (err) {
          if (provider && !res.headersSent) providers.drop(provider, 'the stream could not open');
          throw asHttp(err);
        }
        return undefined;
      },
    },
    {
      method: 'POST',
      path: '/api/flow-tools/calls/:id/result',
      handler: async ({ params, principal, token, body }) => {
        const input = await body();
        let result: ToolResultObject;
        try {
          result = checkAnswer(input);
        } catch (err) {
          throw asHttp(err);
        }
        // Another token's call is as unknown as one that is over: nothing about it is given away.
        const answered = providers.answer({ principal: principal.id, token }, params.id, result);
        if (!answered)
          throw notFound(
            `no tool call ${JSON.stringify(params.id.slice(0, 80))} of your providers waits for an answer (answered already, timed out, cancelled, or not yours)`,
          );
        return { id: params.id, tool: answered.tool, answered: true };
      },
    },
  ];
  return { routes, providers };
}
