// Entities as MCP resources: `hearth://entity/<id>` is an entity's current
// state as JSON (the shape `hearth devices --json` prints), and a camera's
// latest frame is a blob at `hearth://camera/<id>/frame`. Reading one asks the
// policy the same question a read tool would (without using a rate limit).
import {
  ErrorCode,
  McpError,
  type CompleteRequest,
  type CompleteResult,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
} from '@modelcontextprotocol/sdk/types.js';
import { stateJson } from '../present/state.js';
import { type Entity, FRAME_KINDS } from '../devices/model.js';
import type { Hearth } from '../hearth.js';
import { DATA_NOTE } from '../tools/descriptions.js';
import { deviceTitle, quoted } from '../tools/device-text.js';
import type { Principal } from '../tools/types.js';

/** MCP's "resource not found" error code. */
export const RESOURCE_NOT_FOUND = -32002;

export const entityUri = (id: string) => `hearth://entity/${encodeURIComponent(id)}`;
export const frameUri = (id: string) => `hearth://camera/${encodeURIComponent(id)}/frame`;

export type ResourceTarget = { type: 'entity' | 'frame'; entity: Entity };

export const RESOURCE_TEMPLATES: ResourceTemplate[] = [
  {
    uriTemplate: 'hearth://entity/{id}',
    name: 'entity',
    title: 'Entity state',
    description: "An entity's current state as JSON: value, attributes, availability and when it was last reported.",
    mimeType: 'application/json',
  },
  {
    uriTemplate: 'hearth://camera/{id}/frame',
    name: 'camera-frame',
    title: 'Camera frame',
    description: "A camera's latest frame, as the camera sent it.",
  },
];

/**
 * The one "not found" of a resource, for an entity that does not exist and for one the caller may not read alike
 * (same code, same words), so no answer tells a client what exists among what it may not read. -32002 is MCP's
 * "Resource not found", which clients show as such.
 */
function noResource(uri: string, id: string): McpError {
  return new McpError(RESOURCE_NOT_FOUND, `no entity ${JSON.stringify(id.slice(0, 100))} that you may read; resources/list shows them`, {
    uri,
  });
}

/**
 * The URI -> an entity this principal may read, or a resource-not-found error (the same for an unknown entity and
 * one it may not read, whose refusal is audited). `surface` names the MCP method for the audit.
 */
export function readableTarget(hearth: Hearth, principal: Principal, uri: string, surface: string): ResourceTarget {
  const { kind, id } = splitResourceUri(uri);
  const entity = hearth.readableEntity(principal, id, surface);
  // What agents are not shown (Entity.exposed) is, to an MCP client, no entity at all.
  if (!entity || entity.exposed === false) throw noResource(uri, id);
  if (kind === 'frame' && !FRAME_KINDS.has(entity.kind))
    throw new McpError(RESOURCE_NOT_FOUND, `${entity.id} is a ${entity.kind}, not a camera; it has no frame`, { uri });
  return { type: kind, entity };
}

/** A resource URI's kind and entity id, or an error naming what is wrong with it. */
function splitResourceUri(uri: string): { kind: 'entity' | 'frame'; id: string } {
  const m = /^hearth:\/\/(entity)\/([^/?#]+)$|^hearth:\/\/(camera)\/([^/?#]+)\/frame$/.exec(uri);
  if (!m)
    throw new McpError(
      RESOURCE_NOT_FOUND,
      `unknown resource ${JSON.stringify(uri.slice(0, 200))}: Hearth serves hearth://entity/<id> and hearth://camera/<id>/frame`,
      { uri },
    );
  try {
    return { kind: m[3] ? 'frame' : 'entity', id: decodeURIComponent(m[2] ?? m[4]) };
  } catch {
    throw new McpError(ErrorCode.InvalidParams, `the resource URI ${JSON.stringify(uri.slice(0, 200))} is not valid URI encoding`);
  }
}

/** The URI -> an entity, or a resource-not-found error (no read check: for unsubscribing). */
export function parseResourceUri(hearth: Hearth, uri: string): ResourceTarget {
  const { kind, id } = splitResourceUri(uri);
  const entity = hearth.bridge.registry.entity(id);
  if (!entity || entity.exposed === false) throw noResource(uri, id);
  return { type: kind, entity };
}

export function listResources(hearth: Hearth, principal: Principal): Resource[] {
  const out: Resource[] = [];
  for (const entity of hearth.agentEntities(principal)) {
    // Names and areas are device data: cleaned, quoted, and said to be data.
    const where = entity.area ? ` in area ${quoted(entity.area, 40)}` : '';
    out.push({
      uri: entityUri(entity.id),
      name: entity.id,
      title: deviceTitle(entity.name),
      description: `Current state of the ${entity.kind.replace(/_/g, ' ')} ${quoted(entity.name)}${where}, as JSON. ${DATA_NOTE}`,
      mimeType: 'application/json',
    });
    if (FRAME_KINDS.has(entity.kind)) {
      const frame = hearth.bridge.cache.get(entity.id)?.frame;
      out.push({
        uri: frameUri(entity.id),
        name: `${entity.id}/frame`,
        title: deviceTitle(entity.name, 'latest frame'),
        description: `The latest frame of the camera ${quoted(entity.name)}${where}. ${DATA_NOTE}`,
        mimeType: frame?.contentType ?? 'image/jpeg',
        ...(frame ? { size: frame.bytes.length } : {}),
      });
    }
  }
  return out;
}

export function readResource(hearth: Hearth, principal: Principal, uri: string): ReadResourceResult {
  const target = readableTarget(hearth, principal, uri, 'resources/read');
  const state = hearth.bridge.cache.get(target.entity.id);
  if (target.type === 'entity') {
    return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(stateJson(target.entity, state), null, 2) }] };
  }
  if (!state?.frame) {
    throw new McpError(
      RESOURCE_NOT_FOUND,
      `the camera ${quoted(target.entity.name)} has not sent a frame yet${state?.available === false ? ' and is offline' : ''}`,
      { uri },
    );
  }
  return { contents: [{ uri, mimeType: state.frame.contentType, blob: state.frame.bytes.toString('base64') }] };
}

/** The most values one completion answer carries (the spec's limit). */
export const MAX_COMPLETIONS = 100;

/**
 * Completions for the `{id}` of a resource template: the ids of the entities
 * this principal may read (cameras only, for frames) that begin with what was
 * typed (or, failing that, contain it), case-insensitively.
 */
export function completeResourceId(hearth: Hearth, principal: Principal, params: CompleteRequest['params']): CompleteResult['completion'] {
  const { ref, argument } = params;
  if (ref.type !== 'ref/resource') throw new McpError(ErrorCode.InvalidParams, 'Hearth has no prompts; completions are for the {id} of its resource templates');
  const template = RESOURCE_TEMPLATES.find((t) => t.uriTemplate === ref.uri);
  if (!template) {
    throw new McpError(
      ErrorCode.InvalidParams,
      `no resource template ${JSON.stringify(ref.uri.slice(0, 200))}; the templates are ${RESOURCE_TEMPLATES.map((t) => t.uriTemplate).join(' and ')}`,
    );
  }
  if (argument.name !== 'id')
    throw new McpError(ErrorCode.InvalidParams, `the template ${template.uriTemplate} has one argument, id, not ${JSON.stringify(argument.name.slice(0, 40))}`);
  const typed = argument.value.toLowerCase();
  const ids = hearth
    .agentEntities(principal)
    .filter((e) => template.name !== 'camera-frame' || FRAME_KINDS.has(e.kind))
    .map((e) => e.id)
    .sort();
  const starts = ids.filter((id) => id.toLowerCase().startsWith(typed));
  const values = starts.length ? starts : ids.filter((id) => id.toLowerCase().includes(typed));
  return { values: values.slice(0, MAX_COMPLETIONS), total: values.length, hasMore: values.length > MAX_COMPLETIONS };
}
