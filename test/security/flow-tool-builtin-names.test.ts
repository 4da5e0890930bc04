// A flow tool may not take the name of one of Hearth's own tools, in any
// letter case: control_group (absent while the home has no lights, so a flow
// could claim it and get the intent engine's "all lights off" calls), the
// grouped shape's tools (control_lights, ...), or a case variant of a
// reserved name (Get_State next to get_state reads as the same tool to a
// model, and a rule on get_state would not bind it). Nor a case variant of a
// device tool's name. Checked where every flow tool is checked:
// checkExternalToolDef (in-process hearth-tool nodes) and
// FlowToolProviders.register (the daemon's providers), with a real policy
// engine, audit and tool set of a demo home.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkExternalToolDef, createExternalTool, ExternalToolError } from '../../src/tools/external-tools.js';
import { checkDefinitions, FlowToolProviderError, FlowToolProviders } from '../../src/tools/flow-tool-providers.js';
import { useHome } from '../helpers/use-home.js';
import pino from 'pino';

const def = (name: string) => ({
  name,
  description: 'A tool a flow provides.',
  parameters: { type: 'object', properties: {} },
  capability: 'actuator' as const,
});

describe('flow tools cannot take a built-in name', () => {
  for (const name of ['control_group', 'Control_Group', 'CONTROL_LIGHTS', 'control_switches', 'press_buttons', 'Get_State', 'FIND_ENTITIES', 'Get_History']) {
    it(`refuses ${name} as a flow tool name, naming the field`, () => {
      assert.throws(
        () => checkExternalToolDef(def(name)),
        (err: unknown) => err instanceof ExternalToolError && err.code === 'bad_name' && /Hearth's own|reserved/.test(err.message),
      );
      assert.throws(
        () => checkDefinitions([def(name)]),
        (err: unknown) => err instanceof FlowToolProviderError && err.field === 'tools[0].name',
      );
    });
  }

  it('still takes an ordinary name', () => {
    assert.doesNotThrow(() => checkExternalToolDef(def('announce')));
    assert.doesNotThrow(() => checkExternalToolDef(def('control_garden')));
  });
});

describe('a flow tool cannot take a device tool name in another letter case', () => {
  const home = useHome();

  it('refuses a case variant of a device tool as name_taken', async () => {
    const device = home.hearth.tools.all().find((t) => t.capability === 'actuator' && t.meta.entityIds.length === 1)?.name;
    assert.ok(device, 'the demo home has a device tool');
    const providers = new FlowToolProviders(
      home.hearth.tools.external,
      { policy: home.hearth.policy, audit: home.hearth.audit, approvals: home.hearth.approvals, log: pino({ level: 'silent' }) },
      (name) => home.hearth.tools.isDeviceTool(name),
      pino({ level: 'silent' }),
    );
    const upper = device.toUpperCase();
    assert.throws(
      () => providers.register({ principal: 'http:node-red' }, 'flow:n1', checkDefinitions([def(upper)]), () => true),
      (err: unknown) => err instanceof FlowToolProviderError && err.code === 'name_taken' && err.field === 'tools[0].name',
    );
    assert.equal(home.hearth.tools.get(upper), undefined);
    providers.closeAll();
  });

  it("refuses a case variant of another flow's tool, on either path", async () => {
    const log = pino({ level: 'silent' });
    const deps = { policy: home.hearth.policy, audit: home.hearth.audit, approvals: home.hearth.approvals, log };
    const providers = new FlowToolProviders(home.hearth.tools.external, deps, (name) => home.hearth.tools.isDeviceTool(name), log);
    try {
      providers.register({ principal: 'http:node-red' }, 'flow:n1', checkDefinitions([def('announce')]), () => true);
      assert.throws(
        () => providers.register({ principal: 'http:other-red' }, 'flow:n2', checkDefinitions([def('Announce')]), () => true),
        (err: unknown) => err instanceof FlowToolProviderError && err.code === 'name_taken',
      );
      // An in-process hearth-tool node adds straight to the tool set.
      const tool = createExternalTool({ ...def('ANNOUNCE'), source: 'flow:n3', handler: () => 'said' }, deps);
      assert.throws(
        () => home.hearth.tools.external.add(tool),
        (err: unknown) => err instanceof ExternalToolError && err.code === 'name_taken',
      );
      assert.equal(home.hearth.tools.get('ANNOUNCE'), undefined);
    } finally {
      providers.closeAll();
    }
  });
});
