// The sentence templates, in the spirit of Home Assistant's hassil: per intent,
// sentences with alternatives `(a|b)`, optional parts `[a|b]`, slot lists
// `{name}` filled from the registry, and expansion rules `<target>`. Template
// words go through the same normalisation as what people say (so "the" never
// needs writing, and "lights" and "light" are the same word).

import type { EntityKind } from '../../../devices/model.js';

export type IntentId =
  | 'HassTurnOn'
  | 'HassTurnOff'
  | 'HassLightSet'
  | 'HassLightSetColor'
  | 'HassSetLevel'
  | 'HassClimateSetTemperature'
  | 'HassClimateSetMode'
  | 'HassOpenCover'
  | 'HassCloseCover'
  | 'HassStopCover'
  | 'HassSetPosition'
  | 'HassLock'
  | 'HassUnlock'
  | 'HassPress'
  | 'HassGetState'
  | 'HassGetArea'
  | 'HassGetAll'
  | 'HassCameraImage'
  | 'UnknownDevice';

/**
 * Slots: `name` (entity names and aliases), `area`, `kind` (words for kinds of
 * device and what sensors measure), `all` ("all", "every"), `number` (digits
 * or words, with an optional unit), `mode` (climate modes), `state` (state
 * words in questions), `feel` ("warm", "humid": a measurement), `presence`
 * ("anyone": motion), `hint` (a place a camera looks at), `color` (colour
 * words), `any` (unknown words).
 * `feel` and `presence` fill the `kind` capture.
 */
export const RULES: Record<string, string> = {
  in: '(in|on|at|inside|of|for|from)',
  target: '({name} [<in> {area}] | [{all}] {area} {kind} | [{all}] {kind} [<in> {area}])',
  // Area-wide targets make sense for dimming, levels and reads.
  wide: '(<target> | {area} | {all} {area})',
  read: '(<target> | {area})',
  what: '(what is | what are | tell me | give me | check | get | read | show me | show | report | say)',
  property: '(state | status | value | reading | level | condition)',
  anyone: '(anyone | anybody | someone | somebody | people | person)',
  set: '(set | change | adjust | put | turn | bring | make | switch)',
  to: '(to | at)',
};

export interface SentenceGroup {
  intent: IntentId;
  sentences: string[];
}

export const SENTENCES: SentenceGroup[] = [
  {
    intent: 'HassTurnOn',
    sentences: [
      '(turn | switch | power | put | flip) on <target>',
      '(turn | switch | power | put | flip) <target> on',
      '<target> on',
      '(activate | enable | start) <target>',
      '[{all}] {kind} on <in> {area}',
      '(turn | switch) on [{all}] {kind} <in> {area}',
    ],
  },
  {
    intent: 'HassTurnOff',
    sentences: [
      '(turn | switch | power | shut | flip) off <target>',
      '(turn | switch | power | shut | flip) <target> off',
      '<target> off',
      '(deactivate | disable | kill) <target>',
      '[{all}] {kind} off <in> {area}',
      '(turn | switch) off [{all}] {kind} <in> {area}',
    ],
  },
  {
    intent: 'HassLightSet',
    sentences: [
      '(dim | brighten | darken) <wide> [(brightness | level)] [<to>] {number}',
      '<set> [(brightness | level | dimmer)] <in> <wide> [(brightness | level)] <to> {number}',
      '<set> <wide> (brightness | dimmer | light level) <to> {number}',
      '(turn | switch) on <wide> <to> {number}',
      '(turn | switch) <wide> on <to> {number}',
      '<wide> (brightness | dimmer) <to> {number}',
    ],
  },
  {
    intent: 'HassLightSetColor',
    sentences: [
      '<set> <wide> [<to>] {color}',
      '<set> [(color | colour)] <in> <wide> <to> {color}',
      '<set> <wide> (color | colour) <to> {color}',
      '(turn | switch) on <wide> <in> {color}',
      '(turn | switch) <wide> on <in> {color}',
    ],
  },
  {
    intent: 'HassSetLevel',
    sentences: [
      '<set> <wide> [(position | level | value | temperature | setpoint | target)] <to> {number}',
      '<set> [(position | level | value | temperature | setpoint | target)] <in> <wide> <to> {number}',
      '(turn | bring) (up | down) <wide> <to> {number}',
      '(turn | bring) <wide> (up | down) <to> {number}',
      '(raise | lower | increase | decrease) <wide> <to> {number}',
      '<wide> <to> {number}',
    ],
  },
  {
    intent: 'HassClimateSetTemperature',
    sentences: [
      '<set> (temperature | heat | heating | thermostat | setpoint | target temperature) [<in> {area}] <to> {number}',
      'make it {number} [<in> {area}]',
      'make it [<in> {area}] {number}',
      'make {area} {number}',
      '(warm | heat | cool) [(it | up | down)] [{area}] <to> {number}',
      'i want it [<in> {area}] {number}',
      'i want it {number} [<in> {area}]',
    ],
  },
  {
    intent: 'HassClimateSetMode',
    sentences: [
      '<set> <target> [mode] (to | into | on | in) {mode} [mode]',
      '<set> [(mode | hvac mode)] (of | on | for) <target> to {mode} [mode]',
      '<set> (it | mode | hvac | hvac mode) [<in> {area}] (to | into | on | in) {mode} [mode]',
      '<target> (to | on | in) {mode} [mode]',
      '(turn | switch) on {mode} mode [(on | for | <in>) (<target> | {area})]',
    ],
  },
  {
    intent: 'HassOpenCover',
    sentences: ['(open | raise | lift | roll up) [up] <target>', '(open | raise | lift) [up] [{all}] {kind} <in> {area}'],
  },
  {
    intent: 'HassCloseCover',
    sentences: ['(close | shut | lower | roll down) [(down | up)] <target>', '(close | shut | lower) [{all}] {kind} <in> {area}'],
  },
  {
    intent: 'HassStopCover',
    sentences: ['(stop | halt | pause | freeze) <target>'],
  },
  {
    intent: 'HassSetPosition',
    sentences: [
      '(open | close | move | raise | lower | roll) <target> [<to>] {number}',
      '(open | close) <target> (halfway | half way | half)',
    ],
  },
  {
    intent: 'HassLock',
    sentences: ['(lock | secure | bolt) [up] <target>', 'lock up', 'lock everything'],
  },
  {
    intent: 'HassUnlock',
    sentences: ['(unlock | unbolt) <target>'],
  },
  {
    intent: 'HassPress',
    sentences: ['(press | push | hit | trigger | ring) <target>'],
  },
  {
    intent: 'HassGetState',
    sentences: [
      '(is | are) <read> {state}',
      '(is | are) <read> {state} <in> {area}',
      '(is | are) [there] [any] {kind} {state} [<in> {area}]',
      '(is | are) there [any] {kind} [<in> {area}]',
      '(is | are) [there] {presence} <in> {area}',
      '(is | are) [there] {presence} (home | at home | in house)',
      '<what> [current] [<property> | how] [of] <read> [(<property> | doing | set to | at | now | like)]',
      '<what> current <read> [<property>]',
      'how (is | are) <read> [doing]',
      '<read> [current] <property>',
      '(<property> | reading) of <read>',
      'what {kind} is it [<in> {area}]',
      'what {kind} is <read>',
      'how {feel} is it [<in> {area}]',
      'how {feel} is <read>',
      'is it {feel} [<in> {area}]',
      '(do | does) <read> (detect | see | sense | report) {kind}',
      '[(is | are) there] any {kind} [{state}] [<in> {area}]',
      'what mode is <read> [(in | on | set to)]',
      '<what> [current] mode (of | on | for) <read>',
      '<what> <read> mode',
    ],
  },
  {
    intent: 'HassGetArea',
    sentences: [
      'what is (on | happening | going on | up | active | open | running) <in> {area}',
      '(<what> | how is) [(everything | all)] (<in> | about) {area}',
      'anything (on | open | happening) <in> {area}',
    ],
  },
  {
    intent: 'HassGetAll',
    sentences: [
      '[<what>] [(current | overall)] (status | state | overview | summary | report) [(of | for | about) (house | home | everything | all device | all)]',
      '[<what>] (house | home | everything) (status | state | overview | summary)',
      'how (is | are) (house | home | everything | thing | all device) [doing]',
      'what is (on | happening | going on | up | active | open | running) [(in | at | around) (house | home)]',
      '(<what> | list) (everything | all device | all)',
      'status report',
      'what is going on at home',
      'anything (on | open | happening)',
    ],
  },
  {
    intent: 'HassCameraImage',
    sentences: [
      'what (does | can | do) <target> see',
      'what is <target> (seeing | showing | looking at)',
      'what is on <target>',
      '(show | give | send) [me] [(latest | live | current)] [(image | picture | photo | snapshot | frame | feed | view | video | still)] [(of | from | on)] <target> [(image | picture | photo | snapshot | frame | feed | view | video | still)]',
      '(look | peek | view) (at | through | on) <target>',
      '(take | grab | get) [(picture | photo | snapshot | image)] (of | from | with) <target>',
      'who is (at | by | outside | in front of) ({name} | {hint})',
      '(is | are) [there] <anyone> (at | by | outside | in front of) ({name} | {hint})',
      'who (is | was) (there | outside)',
      'who (rang | is ringing) [(doorbell | bell)]',
    ],
  },
  {
    // Commands naming something unknown: a clearer "I don't know it".
    intent: 'UnknownDevice',
    sentences: [
      '(turn | switch | power) (on | off) {any}',
      '(turn | switch | power) {any} (on | off)',
      '(open | close | lock | unlock | dim | brighten | stop) {any}',
      '(set | dim) {any} to {number}',
      'what (does | can) {any} see',
      '(is | are) {any} (on | off | open | closed | locked | unlocked)',
    ],
  },
];

/** Words for kinds of device and for what sensors measure. */
export interface KindClass {
  id: string;
  words: string[];
  /** Does this entity count as one, for an intent of this purpose? */
  match(e: ClassEntity, purpose: 'command' | 'read'): boolean;
  /** When nothing matches, for a read: e.g. temperature -> a thermostat's reading. */
  fallback?: (e: ClassEntity) => boolean;
}

/** What a class predicate sees of an entity. */
export interface ClassEntity {
  kind: EntityKind;
  deviceClass?: string;
  /** Normalised words of the name and aliases. */
  words: Set<string>;
}

const has = (e: ClassEntity, ...words: string[]) => words.some((w) => e.words.has(w));
const dc = (e: ClassEntity, ...classes: string[]) => !!e.deviceClass && classes.includes(e.deviceClass);

export const KIND_CLASSES: KindClass[] = [
  { id: 'light', words: ['light', 'lamp', 'bulb', 'lighting', 'ceiling light', 'spotlight', 'led strip'], match: (e) => e.kind === 'light' || (e.kind === 'switch' && has(e, 'light', 'lamp', 'bulb', 'lighting')) },
  { id: 'switch', words: ['switch', 'plug', 'socket', 'outlet', 'power'], match: (e) => e.kind === 'switch' },
  { id: 'fan', words: ['fan', 'ventilator'], match: (e) => has(e, 'fan') },
  { id: 'cover', words: ['cover', 'blind', 'shade', 'shutter', 'curtain', 'awning', 'roller', 'roller blind'], match: (e) => e.kind === 'cover' && !dc(e, 'garage', 'door', 'gate') || (e.kind === 'cover' && has(e, 'blind', 'shade', 'shutter', 'curtain', 'awning')) },
  {
    id: 'door',
    words: ['door'],
    match: (e, purpose) =>
      (e.kind === 'cover' && (dc(e, 'door', 'garage', 'gate') || has(e, 'door'))) ||
      (e.kind === 'lock' && has(e, 'door')) ||
      (purpose === 'read' && e.kind === 'binary_sensor' && dc(e, 'door', 'garage_door', 'opening')),
  },
  { id: 'garage', words: ['garage door', 'garage'], match: (e) => (e.kind === 'cover' && (dc(e, 'garage') || has(e, 'garage'))) || (e.kind === 'binary_sensor' && dc(e, 'garage_door')) },
  { id: 'window', words: ['window'], match: (e) => (e.kind === 'cover' && (dc(e, 'window') || has(e, 'window'))) || (e.kind === 'binary_sensor' && dc(e, 'window')) },
  { id: 'gate', words: ['gate'], match: (e) => (e.kind === 'cover' || e.kind === 'lock') && (dc(e, 'gate') || has(e, 'gate')) },
  { id: 'lock', words: ['lock', 'deadbolt', 'door lock'], match: (e) => e.kind === 'lock' },
  { id: 'climate', words: ['thermostat', 'heating', 'heater', 'heat', 'climate', 'hvac', 'ac', 'aircon', 'air conditioning', 'air conditioner', 'boiler', 'radiator'], match: (e) => e.kind === 'climate' },
  { id: 'camera', words: ['camera', 'cam', 'webcam', 'doorbell', 'doorbell camera', 'security camera'], match: (e) => e.kind === 'camera' },
  {
    id: 'temperature',
    words: ['temperature', 'temp'],
    match: (e, purpose) => (purpose === 'command' ? e.kind === 'climate' : e.kind === 'sensor' && dc(e, 'temperature')),
    fallback: (e) => e.kind === 'climate',
  },
  { id: 'humidity', words: ['humidity', 'relative humidity'], match: (e) => e.kind === 'sensor' && dc(e, 'humidity') },
  { id: 'motion', words: ['motion', 'movement', 'occupancy', 'presence'], match: (e) => e.kind === 'binary_sensor' && dc(e, 'motion', 'occupancy', 'presence') },
  { id: 'sensor', words: ['sensor', 'reading', 'measurement'], match: (e) => e.kind === 'sensor' || e.kind === 'binary_sensor' },
  { id: 'button', words: ['button', 'doorbell button'], match: (e) => e.kind === 'button' },
  { id: 'everything', words: ['everything', 'device', 'thing', 'stuff', 'all device', 'all thing', 'anything'], match: () => true },
];

/** "How warm is it" measures temperature. */
export const FEEL_WORDS: Record<string, string> = {
  warm: 'temperature', hot: 'temperature', cold: 'temperature', cool: 'temperature', chilly: 'temperature', freezing: 'temperature',
  humid: 'humidity', dry: 'humidity', damp: 'humidity', muggy: 'humidity',
};

/** Words naming places a camera looks at ("who is at the door"). */
export const HINT_WORDS = ['door', 'front door', 'back door', 'gate', 'entrance', 'porch', 'driveway', 'garden', 'yard', 'backyard'];

export const ALL_WORDS = ['all', 'every', 'each', 'both', 'any'];

/** State words in questions, to their canonical word. */
export const STATE_WORDS: Record<string, string> = {
  on: 'on', off: 'off', open: 'open', opened: 'open', closed: 'closed', shut: 'closed', close: 'closed',
  locked: 'locked', unlocked: 'unlocked', opening: 'opening', closing: 'closing', jammed: 'jammed', stopped: 'stopped',
  running: 'on', active: 'on', 'turned on': 'on', 'turned off': 'off', 'switched on': 'on', 'switched off': 'off',
  detected: 'on', clear: 'off', heating: 'heating', cooling: 'cooling', idle: 'idle', secure: 'locked', secured: 'locked',
};

/** Mode synonyms, used when the climate entity offers the mode. */
export const MODE_SYNONYMS: Record<string, string> = {
  heating: 'heat', warming: 'heat', cooling: 'cool', 'air conditioning': 'cool', automatic: 'auto', 'auto mode': 'auto',
  dehumidify: 'dry', drying: 'dry', fan: 'fan_only', 'fan only': 'fan_only', economy: 'eco', 'heat cool': 'heat_cool',
};

/** Which kinds each intent acts on. */
export const INTENT_KINDS: Partial<Record<IntentId, EntityKind[]>> = {
  HassTurnOn: ['switch', 'light', 'climate'],
  HassTurnOff: ['switch', 'light', 'climate'],
  HassLightSet: ['light'],
  HassLightSetColor: ['light'],
  HassSetLevel: ['light', 'climate', 'cover', 'number'],
  HassClimateSetTemperature: ['climate'],
  HassClimateSetMode: ['climate'],
  HassOpenCover: ['cover'],
  HassCloseCover: ['cover'],
  HassStopCover: ['cover'],
  HassSetPosition: ['cover'],
  HassLock: ['lock'],
  HassUnlock: ['lock'],
  HassPress: ['button'],
  HassCameraImage: ['camera'],
};

/** Placeholders, offered only when the home itself gives fewer than two examples. */
export const FALLBACK_EXAMPLES = ['turn on the <device>', 'is the <device> on?', 'what is on in the <room>?'];
