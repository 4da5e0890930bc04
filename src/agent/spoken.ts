// What doors that answer people in words (a voice satellite, a chat app over
// the OpenAI-compatible endpoint) say about what a turn did, when a model's
// words are not for people: a call held for approval is one sentence ("Opening
// the garage door needs an owner's approval; I've asked."), never the rule,
// the approval id or a CLI line (those stay in the structured result, the
// page and the audit); a camera read is described, since no picture can be
// shown there. Every person-facing sentence of that kind lives here, so the
// model-facing texts (tool results) and the offline model stay what they are.
import { cleanDeviceText } from '../devices/device-text.js';
import type { Hearth } from '../hearth.js';
import { formatAge } from '../util/time.js';
import type { ToolCallSummary } from './turn-summary.js';
import { FRAME_KINDS } from '../devices/model.js';
import { refusedOverBound } from './turn-actuations.js';

/** One call held for approval, as a person hears of it. */
export interface HeldCall {
  /** What the call would do, as a gerund phrase: "opening the garage door". */
  doing: string;
  /** Who may approve it: policy subjects (`role:owner`, `cli:alice`, `*`). */
  approvers: readonly string[];
}

const GERUNDS: Record<string, string> = {
  open: 'opening',
  close: 'closing',
  stop: 'stopping',
  lock: 'locking',
  unlock: 'unlocking',
  disarm: 'disarming',
  arm_home: 'arming',
  arm_away: 'arming',
  arm_night: 'arming',
  arm_vacation: 'arming',
  arm_custom_bypass: 'arming',
  trigger: 'triggering',
  turn_on: 'turning on',
  turn_off: 'turning off',
  toggle: 'switching',
  press: 'pressing',
  set_position: 'moving',
  set_tilt: 'tilting',
  set_temperature: 'setting the temperature of',
  set_value: 'changing',
  select_option: 'changing',
};

/** A device's name as a person says it: "Garage door" -> "the garage door" (cleaned: it is device data). */
export function spokenName(name: string | undefined): string {
  const clean = cleanDeviceText(name, 60);
  if (!clean) return 'that device';
  if (/^the\s/i.test(clean)) return clean.charAt(0).toLowerCase() + clean.slice(1);
  // "Garage door" reads as a common noun; "TV" or "HomePod" keep their capitals.
  const first = clean.split(' ')[0];
  const lower = first.length > 1 && first.slice(1) === first.slice(1).toLowerCase() ? clean.charAt(0).toLowerCase() + clean.slice(1) : clean;
  return `the ${lower}`;
}

/** "opening the garage door"; an action with no words of its own: "using the garage door". */
export function doingPhrase(action: string | undefined, name: string | undefined): string {
  const verb = (action && GERUNDS[action]) ?? (action?.startsWith('set_') ? 'changing' : 'using');
  return `${verb} ${name === undefined ? 'that device' : spokenName(name)}`;
}

const article = (word: string) => (/^[aeiou]/i.test(word) ? 'an' : 'a');

/** Approvers as a possessive a person understands: "an owner's", "an owner's or Alice's", "someone's". */
export function approversPossessive(subjects: readonly string[]): string {
  const words = new Set<string>();
  for (const subject of subjects) {
    if (subject.startsWith('role:')) {
      const role = subject.slice(5);
      words.add(/^[\p{L}\p{N}_-]{1,40}$/u.test(role) ? `${article(role)} ${role.replace(/_/g, ' ')}'s` : "someone's");
    } else if (/^[\p{L}\p{N}_.-]+:[\p{L}\p{N}_.-]{1,40}$/u.test(subject)) {
      words.add(`${subject.slice(subject.indexOf(':') + 1)}'s`);
    } else {
      words.add("someone's");
    }
  }
  if (!words.size) words.add("an owner's");
  return [...words].join(' or ');
}

const capital = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** One sentence for the calls a turn held: "Opening the garage door needs an owner's approval; I've asked." */
export function approvalSentence(held: readonly HeldCall[]): string {
  const byWho = new Map<string, string[]>();
  for (const h of held) {
    const who = approversPossessive(h.approvers);
    const list = byWho.get(who) ?? [];
    if (!list.includes(h.doing)) list.push(h.doing);
    byWho.set(who, list);
  }
  return [...byWho]
    .map(([who, doings]) => {
      const what = doings.length > 1 ? `${doings.slice(0, -1).join(', ')} and ${doings.at(-1)}` : doings[0];
      return `${capital(what)} ${doings.length > 1 ? 'need' : 'needs'} ${who} approval; I've asked.`;
    })
    .join(' ');
}

/** The calls behind these approval ids, as a person hears of them. */
export function heldCalls(hearth: Hearth, approvalIds: readonly string[]): HeldCall[] {
  return approvalIds.map((id) => {
    const a = hearth.approvals.get(id);
    if (!a) return { doing: 'that', approvers: ['role:owner'] };
    const request = hearth.tools.policyRequest(a.tool, a.args, hearth.policy.principal(a.principal));
    const entity = a.entityId ? hearth.bridge.registry.entity(a.entityId) : undefined;
    const approvers = hearth.policy.approversFor(
      request
        ? {
            tool: request.tool,
            capability: request.capability,
            action: request.action,
            ...(request.entityId ? { entityId: request.entityId } : {}),
            ...(request.area ? { area: request.area } : {}),
            ...(request.kind ? { kind: request.kind } : {}),
            ...(request.deviceClass ? { deviceClass: request.deviceClass } : {}),
          }
        : { tool: a.tool },
    );
    const action = request?.action ?? (typeof a.args.action === 'string' ? a.args.action : undefined);
    return { doing: entity ? doingPhrase(action, entity.name) : doingPhrase(action, undefined), approvers };
  });
}

/** What a camera read can tell someone who cannot see the picture. */
export function cameraSentence(hearth: Hearth, entityId: string, now = Date.now()): string {
  const entity = hearth.bridge.registry.entity(entityId);
  const name = spokenName(entity?.name ?? entityId);
  const state = hearth.bridge.cache.get(entityId);
  if (!state?.frame) return `${capital(name)} has not sent a picture yet.`;
  const offline = state.available === false ? `${capital(name)} is offline. ` : '';
  const when = state.retained ? 'from before Hearth started listening' : `from ${formatAge(now - state.frame.at)}`;
  return `${offline}The latest picture from ${name} is ${when}; I can only show it on a screen, on Hearth's page.`;
}

/** Sentences of a model's answer, split where a sentence ends. */
function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+(?=\S)/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** A sentence that talks of an approval (the model's own way of saying it, or the tool's words for a model). */
function aboutApproval(sentence: string, approvalIds: readonly string[]): boolean {
  return /approv|hearth approve|same call again|requires confirmation/i.test(sentence) || approvalIds.some((id) => sentence.includes(id));
}

/** A sentence that offers a picture where none can be shown. */
function offersPicture(sentence: string): boolean {
  return /\b(here is|here's|see|shown|attached|below|above)\b.*\b(frame|picture|image|photo|snapshot)\b/i.test(sentence);
}

/**
 * The answer for a person, from the model's answer and what the turn did: the
 * model's sentences about held approvals give way to Hearth's one sentence;
 * a picture the model offers gives way to what the camera read can tell.
 */
export function personAnswer(hearth: Hearth, modelText: string, calls: readonly ToolCallSummary[], approvalIds: readonly string[]): string {
  const answer = answerFor(hearth, modelText, calls, approvalIds);
  // The model may not say it, and a person must know: some of what was asked was not done.
  const over = calls.filter((c) => refusedOverBound(c.result)).length;
  if (!over) return answer;
  const max = hearth.bridge.config.agent.maxActionsPerTurn;
  return `${answer}${answer ? ' ' : ''}I stopped there: one request may make at most ${max} ${max === 1 ? 'action' : 'actions'}, so ${over} more ${over === 1 ? 'was' : 'were'} not done.`;
}

function answerFor(hearth: Hearth, modelText: string, calls: readonly ToolCallSummary[], approvalIds: readonly string[]): string {
  const cameras = [
    ...calls.filter((c) => !c.isError && typeof c.args?.camera === 'string').map((c) => c.args!.camera as string),
    ...calls.filter((c) => !c.isError && /^Latest frame from the camera /.test(c.result ?? '')).flatMap((c) => cameraOf(hearth, c)),
  ];
  let said = sentences(modelText);
  const picture = cameras.length > 0 && said.some(offersPicture);
  // Nothing to say in Hearth's words: the model's answer as it is (its line breaks too).
  if (!approvalIds.length && !picture) return modelText;
  if (approvalIds.length) said = said.filter((s) => !aboutApproval(s, approvalIds));
  if (picture) {
    said = said.filter((s) => !offersPicture(s));
    said.push(...[...new Set(cameras)].map((id) => cameraSentence(hearth, id)));
  }
  if (approvalIds.length) said.push(approvalSentence(heldCalls(hearth, approvalIds)));
  return said.join(' ');
}

/** The camera entity a read call looked at (a per-camera tool names none in its arguments). */
function cameraOf(hearth: Hearth, call: ToolCallSummary): string[] {
  const tool = hearth.tools.get(call.name);
  return tool ? tool.meta.entityIds.filter((id) => FRAME_KINDS.has(hearth.bridge.registry.entity(id)?.kind ?? 'sensor')).slice(0, 1) : [];
}
