// `tools` and `tools.stats`: the tool set as a model receives it, and its size in both shapes.
import type { Hearth } from '../../hearth.js';
import { estimateTokens, toolSpecs } from '../../tools/generator.js';
import { callerPrincipal } from '../caller.js';
import type { ToolsAnswer, ToolsStatsAnswer } from '../schema.js';

export function tools(hearth: Hearth, p: { as?: string }): ToolsAnswer {
  const set = p.as ? hearth.tools.forPrincipal(callerPrincipal((id) => hearth.policy.rolesOf(id), p.as)) : hearth.tools.all();
  const specs = toolSpecs(set);
  return {
    shape: hearth.tools.shape,
    tools: set.map((t, i) => ({ name: t.name, capability: t.capability, description: t.description, spec: specs[i] })),
  };
}

export function toolsStats(hearth: Hearth): ToolsStatsAnswer {
  return {
    entities: hearth.bridge.registry.entities().length,
    shape: hearth.tools.shape,
    shapes: (['per-entity', 'grouped'] as const).map((shape) => {
      const set = hearth.toolsInShape(shape);
      return { shape, tools: set.length, tokens: estimateTokens(toolSpecs(set)) };
    }),
  };
}
