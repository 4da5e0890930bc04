// The host tools over HTTP, as the token's principal: GET /api/tools lists the
// tools it could use (name, description, JSON Schema of the arguments); POST
// /api/tools/:name/call runs one through the same pipeline as every other
// front door (policy, confirm rules, audit). Node-RED's bridge uses these when
// it connects to a running daemon. A tool the caller could never use is
// refused as unknown to it (403), without running its handler.
import { onlyFields } from './body.js';
import { badField, forbidden, notFound } from './errors.js';
import type { ApiContext, Route } from './route.js';

export function toolRoutes({ hearth }: ApiContext): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/tools',
      handler: ({ principal }) =>
        hearth.tools.forPrincipal(principal).map((t) => ({
          name: t.name,
          description: t.description,
          capability: t.capability,
          parameters: t.parameters,
          entities: t.meta.entityIds,
          actions: t.meta.actions,
        })),
    },
    {
      method: 'POST',
      path: '/api/tools/:name/call',
      handler: async ({ params, principal, body }) => {
        const input = await body();
        onlyFields(input, ['args']);
        const args = input.args ?? {};
        // Refused before the pipeline: the attempt is audited as every door's is (ToolSet.refuse).
        const refuse = (text: string) => hearth.tools.refuse(params.name, args, principal, {}, text).text!;
        if (!args || typeof args !== 'object' || Array.isArray(args))
          throw badField('args', refuse('must be a JSON object of the tool\'s arguments, e.g. {"action":"turn_on"}'));
        const tool = hearth.tools.get(params.name);
        if (!tool) throw notFound(refuse(`no tool ${JSON.stringify(params.name.slice(0, 80))}; GET /api/tools lists the ones you may use`));
        if (!hearth.tools.forPrincipal(principal).some((t) => t.name === tool.name)) {
          throw forbidden(
            refuse(
              `${principal.id} may not use ${tool.name} (${principal.roles.length ? `roles ${principal.roles.join(', ')}` : 'no roles'}); GET /api/tools lists the ones you may use`,
            ),
          );
        }
        // The pipeline's answer, refusals included, is the result: 200 with isError, as a model would read it.
        const result = await hearth.tools.call(tool.name, args as Record<string, unknown>, principal);
        return { text: result.text ?? '', isError: result.isError ?? false, details: result.details ?? {} };
      },
    },
  ];
}
