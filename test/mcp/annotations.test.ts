// Tool annotations and result mapping, without a home.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isDestructive, isIdempotent, toolAnnotations } from '../../src/mcp/annotations.js';
import { idempotencyKeyOf, toCallToolResult } from '../../src/mcp/results.js';
import type { GeneratedTool } from '../../src/tools/types.js';

const tool = (capability: 'read' | 'actuator', kinds: string[], actions: string[]): GeneratedTool => ({
  name: 't',
  description: 'd',
  parameters: { type: 'object', properties: {} },
  capability,
  handler: () => '',
  meta: { entityIds: ['a.b', 'c.d'], kinds, actions },
});

describe('MCP annotations', () => {
  it('marks reads read-only and never destructive', () => {
    assert.deepEqual(toolAnnotations(tool('read', ['sensor'], [])), { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
  });

  it('destructive: unlock, open, disarm, and cover/valve positions', () => {
    assert.equal(isDestructive(tool('actuator', ['lock'], ['lock', 'unlock'])), true);
    assert.equal(isDestructive(tool('actuator', ['alarm_control_panel'], ['arm_home', 'disarm'])), true);
    assert.equal(isDestructive(tool('actuator', ['cover'], ['close', 'set_position'])), true);
    assert.equal(isDestructive(tool('actuator', ['valve'], ['open', 'close'])), true);
    assert.equal(isDestructive(tool('actuator', ['switch'], ['turn_on', 'turn_off'])), false);
    assert.equal(isDestructive(tool('actuator', ['climate'], ['set_mode', 'set_temperature'])), false);
    assert.equal(isDestructive(tool('actuator', ['fan'], ['set_percentage'])), false);
  });

  it('idempotent: set-to-a-state actions only', () => {
    assert.equal(isIdempotent(tool('actuator', ['switch'], ['turn_on', 'turn_off'])), true);
    assert.equal(isIdempotent(tool('actuator', ['lock'], ['lock', 'unlock'])), true);
    assert.equal(isIdempotent(tool('actuator', ['number'], ['set_value'])), true);
    assert.equal(isIdempotent(tool('actuator', ['button'], ['press'])), false);
    assert.equal(isIdempotent(tool('actuator', ['cover'], ['open', 'close', 'stop'])), false);
    assert.equal(isIdempotent(tool('actuator', ['cover'], ['set_position'])), false);
  });
});

describe('MCP results', () => {
  it('maps text, images and errors; keeps details off the wire', () => {
    const r = toCallToolResult({
      text: 'Latest frame',
      images: [{ url: 'data:image/jpeg;base64,/9j/AAAA', mimeType: 'image/jpeg', bytes: 4 }],
      details: { topic: 'secret/topic', auditId: 7 },
    });
    assert.deepEqual(r, {
      content: [
        { type: 'text', text: 'Latest frame' },
        { type: 'image', data: '/9j/AAAA', mimeType: 'image/jpeg' },
      ],
      _meta: { 'hearth/auditId': 7 },
    });
    const held = toCallToolResult({ text: 'needs approval', isError: true, details: { approvalId: 'abc123', decision: 'confirm' } });
    assert.equal(held.isError, true);
    assert.deepEqual(held._meta, { 'hearth/approvalId': 'abc123' });
    assert.deepEqual(toCallToolResult({ isError: true }).content, [{ type: 'text', text: 'failed' }]);
  });

  it('takes only sane idempotency keys', () => {
    assert.equal(idempotencyKeyOf({ 'hearth/idempotencyKey': 'abc-1' }), 'abc-1');
    assert.equal(idempotencyKeyOf({ idempotencyKey: 'x:y' }), 'x:y');
    assert.equal(idempotencyKeyOf({ idempotencyKey: 'has space' }), undefined);
    assert.equal(idempotencyKeyOf({ idempotencyKey: 5 }), undefined);
    assert.equal(idempotencyKeyOf(undefined), undefined);
  });
});
