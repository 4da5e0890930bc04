// How each kind of entity behaves in the simulator: its internal state, what
// it reports on the wire, which commands it refuses, and how it acts on the
// ones it accepts. A behaviour knows nothing about MQTT; its device (see
// device.ts) turns `wire()` into payloads and hands it decoded commands.
import { colorAttributes, parseColor, type Rgb } from '../devices/color.js';
import { toDeviceColorTemp } from '../devices/color-temp.js';
import type { Command } from '../devices/commands.js';
import { readJsonPath } from '../devices/json-path.js';
import type { Entity, Range } from '../devices/model.js';
import type { Logger } from '../log.js';
import { drawCameraFrame } from './camera-frame.js';
import { errorOf } from '../util/error.js';

/** What a behaviour may ask of its device. */
export interface BehaviourHost {
  readonly log: Logger;
  /** Write this entity's `wire()` into the device's topic documents and publish them (retained). */
  publishState(entity: Entity): void;
  /** Publish a payload as it is, retained (camera frames). */
  publishRaw(topic: string, payload: Buffer | string): Promise<void>;
}

/** The main value and attributes as they go on the wire (vocabulary words, JSON booleans, numbers). */
export interface WireState {
  value?: unknown;
  attributes: Record<string, unknown>;
}

/** setTimeout/setInterval that never hold the process open and are all cleared at once. */
export class Timers {
  private readonly handles = new Set<NodeJS.Timeout>();

  after(ms: number, fn: () => void): NodeJS.Timeout {
    const handle = setTimeout(() => {
      this.handles.delete(handle);
      fn();
    }, ms);
    handle.unref();
    this.handles.add(handle);
    return handle;
  }

  every(ms: number, fn: () => void): NodeJS.Timeout {
    const handle = setInterval(fn, ms);
    handle.unref();
    this.handles.add(handle);
    return handle;
  }

  cancel(handle: NodeJS.Timeout | undefined): void {
    if (!handle) return;
    clearTimeout(handle);
    clearInterval(handle);
    this.handles.delete(handle);
  }

  clear(): void {
    for (const handle of this.handles) {
      clearTimeout(handle);
      clearInterval(handle);
    }
    this.handles.clear();
  }
}

export abstract class Behaviour {
  protected readonly timers = new Timers();
  protected readonly sim: Record<string, unknown>;

  constructor(
    readonly entity: Entity,
    protected readonly host: BehaviourHost,
  ) {
    this.sim = entity.simulate ?? {};
  }

  /** The simulated device's internal state in logical terms (`value` plus attributes), a copy. */
  abstract snapshot(): Record<string, unknown>;

  /** What goes into the topic documents; undefined when the entity publishes nothing there. */
  wire(): WireState | undefined {
    return undefined;
  }

  /** Why a decoded command is impossible for this device; undefined when it is fine. */
  reject(_cmd: Command): string | undefined {
    return undefined;
  }

  /** Act on an accepted command, echoing the new state the way a real device does. */
  apply(_cmd: Command): void {}

  /** Publish what is not kept in topic documents (a camera frame); awaited on every connect. */
  async announce(): Promise<void> {}

  /** Begin periodic work (sensor readings, camera frames, thermostat drift). */
  start(): void {}

  /** Stop all timers (the device lost power): transitions freeze or finish. */
  pause(): void {
    this.timers.clear();
  }

  protected publish(): void {
    this.host.publishState(this.entity);
  }

  /** A `simulate:` hint as a number, or the default. */
  protected hint(name: string, fallback: number): number {
    return toNumber(this.sim[name]) ?? fallback;
  }

  /** The report word for a logical state (`locked` -> `LOCKED`). */
  protected word(logical: string): string {
    return this.entity.states[logical] ?? logical;
  }

  /** A logical state from `simulate.initial` (a logical name, a report word, or a boolean). */
  protected logical(raw: unknown, fallback: string): string {
    if (raw === undefined || raw === null) return fallback;
    if (typeof raw === 'boolean') return raw ? 'on' : 'off';
    const lower = String(raw).trim().toLowerCase();
    if (!lower) return fallback;
    if (lower in this.entity.states) return lower;
    for (const [logical, word] of Object.entries(this.entity.states)) if (word.toLowerCase() === lower) return logical;
    return lower;
  }

  /** The main value from `simulate.initial`: the scalar itself, or from an object the field at the value path (or one of `keys`). */
  protected initialMain(...keys: string[]): unknown {
    const init = this.sim.initial;
    if (!isObject(init)) return init;
    return fromDoc(init, this.entity.valuePath, keys);
  }

  /** An attribute from an object `simulate.initial` (the entity's document): at the attribute's path, or one of `keys`. */
  protected initialAttr(name: string, ...keys: string[]): unknown {
    const init = this.sim.initial;
    if (!isObject(init)) return undefined;
    return fromDoc(init, this.entity.attributes[name]?.path, [name, ...keys]);
  }
}

// ---------------------------------------------------------------------------
// Actuators
// ---------------------------------------------------------------------------

export class SwitchBehaviour extends Behaviour {
  protected on: boolean;

  constructor(entity: Entity, host: BehaviourHost) {
    super(entity, host);
    this.on = this.logical(this.initialMain('state', 'value'), 'off') === 'on';
  }

  snapshot(): Record<string, unknown> {
    return { value: this.on ? 'on' : 'off' };
  }

  override wire(): WireState {
    return { value: this.word(this.on ? 'on' : 'off'), attributes: {} };
  }

  override apply(cmd: Command): void {
    if (cmd.action === 'turn_on') this.on = true;
    else if (cmd.action === 'turn_off') this.on = false;
    this.publish();
  }
}

export class LightBehaviour extends SwitchBehaviour {
  private brightness: number;
  private readonly range: Range;
  /** A colour light's colour (white to begin with), reported in its first colour mode. */
  private color?: Rgb;
  /** A white light's colour temperature, in the unit the light speaks (mireds for a Zigbee-like bulb). */
  private colorTemp?: number;
  /** Which the light shows: its colour (`xy`, `hs`, `rgb`) or its colour temperature (`color_temp`). */
  private colorMode?: string;

  constructor(entity: Entity, host: BehaviourHost) {
    super(entity, host);
    this.range = entity.ranges.brightness ?? { min: 0, max: 255 };
    const initial = toNumber(this.initialAttr('brightness')) ?? this.hint('brightness', 128);
    this.brightness = clamp(initial, Math.max(1, this.range.min), this.range.max);
    if (entity.colorModes?.length) this.color = parseColor(String(this.sim.color ?? 'white')) ?? { r: 255, g: 255, b: 255 };
    this.colorMode = entity.colorModes?.[0];
    if (entity.colorTemp) {
      this.colorTemp = toDeviceColorTemp(entity.colorTemp, this.hint('color_temp_kelvin', 2700));
      if (!this.colorMode || this.sim.color === undefined) this.colorMode = 'color_temp';
    }
  }

  private colorAttributes(): Record<string, number | string> {
    const mode = this.entity.colorModes?.[0];
    const out: Record<string, number | string> = mode && this.color ? colorAttributes(mode, this.color) : {};
    if (this.colorTemp !== undefined) out.color_temp = this.colorTemp;
    if (this.colorMode && 'color_mode' in this.entity.attributes) out.color_mode = this.colorMode;
    return out;
  }

  override snapshot(): Record<string, unknown> {
    return { value: this.on ? 'on' : 'off', brightness: this.brightness, ...this.colorAttributes() };
  }

  override wire(): WireState {
    return { value: this.word(this.on ? 'on' : 'off'), attributes: { brightness: this.brightness, ...this.colorAttributes() } };
  }

  override reject(cmd: Command): string | undefined {
    if (cmd.action === 'turn_on' && cmd.brightness !== undefined) return outside('brightness', cmd.brightness, this.range);
    const ct = this.entity.colorTemp;
    if (cmd.action === 'turn_on' && cmd.color_temp !== undefined && ct) {
      // In the light's own unit, so a kelvin that came through mireds and back is not off by its rounding.
      const ends = [toDeviceColorTemp(ct, ct.minKelvin), toDeviceColorTemp(ct, ct.maxKelvin)];
      return outside('color_temp', toDeviceColorTemp(ct, cmd.color_temp), { min: Math.min(...ends), max: Math.max(...ends) });
    }
    return undefined;
  }

  override apply(cmd: Command): void {
    if (cmd.action === 'turn_on') {
      if (cmd.brightness === 0)
        this.on = false; // brightness 0 is off; the last brightness is kept for the next turn_on
      else {
        this.on = true;
        if (cmd.brightness !== undefined) this.brightness = cmd.brightness;
        if (cmd.color !== undefined && this.color) {
          this.color = parseColor(cmd.color) ?? this.color;
          this.colorMode = this.entity.colorModes?.[0];
        }
        if (cmd.color_temp !== undefined && this.entity.colorTemp) {
          this.colorTemp = toDeviceColorTemp(this.entity.colorTemp, cmd.color_temp);
          this.colorMode = 'color_temp';
        }
      }
    } else if (cmd.action === 'turn_off') this.on = false;
    this.publish();
  }
}

export class FanBehaviour extends SwitchBehaviour {
  private percentage: number;
  private preset?: string;

  constructor(entity: Entity, host: BehaviourHost) {
    super(entity, host);
    this.percentage = toNumber(this.initialAttr('percentage')) ?? this.hint('percentage', 50);
  }

  override snapshot(): Record<string, unknown> {
    return { value: this.on ? 'on' : 'off', percentage: this.percentage, ...(this.preset ? { preset_mode: this.preset } : {}) };
  }

  override wire(): WireState {
    const attributes: Record<string, unknown> = {};
    if ('percentage' in this.entity.attributes) attributes.percentage = this.percentage;
    if ('preset_mode' in this.entity.attributes && this.preset) attributes.preset_mode = this.preset;
    return { value: this.word(this.on ? 'on' : 'off'), attributes };
  }

  override reject(cmd: Command): string | undefined {
    if (cmd.action === 'set_percentage') return outside('percentage', cmd.percentage, this.entity.ranges.percentage ?? { min: 0, max: 100 });
    if (cmd.action === 'set_preset_mode' && !(this.entity.options.preset_mode ?? []).includes(cmd.preset_mode))
      return `preset ${cmd.preset_mode} is not offered`;
    return undefined;
  }

  override apply(cmd: Command): void {
    if (cmd.action === 'set_percentage') {
      this.percentage = cmd.percentage;
      this.on = cmd.percentage > 0;
      this.publish();
    } else if (cmd.action === 'set_preset_mode') {
      this.preset = cmd.preset_mode;
      this.on = true;
      this.publish();
    } else super.apply(cmd);
  }
}

/** An alarm panel: arms after a short exit delay, disarms at once. */
export class AlarmBehaviour extends Behaviour {
  private value: string;

  constructor(entity: Entity, host: BehaviourHost) {
    super(entity, host);
    this.value = this.logical(this.initialMain('state', 'value'), 'disarmed');
  }

  snapshot(): Record<string, unknown> {
    return { value: this.value };
  }

  override wire(): WireState {
    return { value: this.word(this.value), attributes: {} };
  }

  override apply(cmd: Command): void {
    if (cmd.action === 'disarm') {
      this.value = 'disarmed';
      this.publish();
      return;
    }
    if (cmd.action !== 'arm_home' && cmd.action !== 'arm_away' && cmd.action !== 'arm_night') return;
    const target = cmd.action.replace('arm_', 'armed_');
    this.value = 'arming';
    this.publish();
    this.timers.after(this.hint('travel_ms', 500), () => {
      this.value = target;
      this.publish();
    });
  }
}

export class LockBehaviour extends Behaviour {
  /** locked | unlocked | locking | unlocking | jammed */
  private value: string;
  private pending?: { target: 'locked' | 'unlocked'; timer: NodeJS.Timeout };

  constructor(entity: Entity, host: BehaviourHost) {
    super(entity, host);
    const initial = this.logical(this.initialMain('state', 'value'), 'locked');
    this.value = initial === 'locking' ? 'locked' : initial === 'unlocking' ? 'unlocked' : initial;
  }

  snapshot(): Record<string, unknown> {
    return { value: this.value };
  }

  override wire(): WireState {
    return { value: this.word(this.value), attributes: {} };
  }

  override apply(cmd: Command): void {
    if (cmd.action !== 'lock' && cmd.action !== 'unlock') return;
    const target = cmd.action === 'lock' ? 'locked' : 'unlocked';
    this.timers.cancel(this.pending?.timer);
    this.pending = undefined;
    if (this.value === target) {
      this.publish();
      return;
    }
    this.value = cmd.action === 'lock' ? 'locking' : 'unlocking';
    this.publish();
    const timer = this.timers.after(this.hint('travel_ms', 500), () => {
      this.pending = undefined;
      this.value = target;
      this.publish();
    });
    this.pending = { target, timer };
  }

  override pause(): void {
    super.pause();
    // The bolt finishes its travel with the power gone.
    if (this.pending) this.value = this.pending.target;
    this.pending = undefined;
  }
}

export class CoverBehaviour extends Behaviour {
  private value: string;
  private position: number;
  private readonly range: Range;
  private motion?: { from: number; to: number; final: 'open' | 'closed'; startedAt: number; durationMs: number; timer?: NodeJS.Timeout };

  constructor(entity: Entity, host: BehaviourHost) {
    super(entity, host);
    this.range = entity.ranges.position ?? { min: 0, max: 100, step: 1 };
    const main = this.initialMain('state', 'value');
    const mainNumber = toNumber(main); // a bare number is a position
    const word = mainNumber === undefined ? this.logical(main, '') : '';
    const pos = toNumber(this.initialAttr('position')) ?? toNumber(this.sim.position) ?? mainNumber;
    if (pos !== undefined) {
      this.position = clamp(pos, this.range.min, this.range.max);
      this.value = word && word !== 'opening' && word !== 'closing' ? word : this.position > this.range.min ? 'open' : 'closed';
    } else {
      this.value = word === 'open' ? 'open' : word === 'stopped' ? 'stopped' : 'closed';
      this.position = this.value === 'open' ? this.range.max : this.range.min;
    }
  }

  snapshot(): Record<string, unknown> {
    return { value: this.value, position: this.position };
  }

  override wire(): WireState {
    return { value: this.word(this.value), attributes: { position: this.position } };
  }

  override reject(cmd: Command): string | undefined {
    if (cmd.action === 'set_position') return outside('position', cmd.position, this.range);
    return undefined;
  }

  override apply(cmd: Command): void {
    switch (cmd.action) {
      case 'open':
        return this.moveTo(this.range.max, 'open');
      case 'close':
        return this.moveTo(this.range.min, 'closed');
      case 'set_position':
        return this.moveTo(cmd.position, cmd.position > this.range.min ? 'open' : 'closed');
      case 'stop':
        if (this.motion) this.halt();
        this.publish();
        return;
    }
  }

  override pause(): void {
    if (this.motion) this.halt();
    super.pause();
  }

  private moveTo(target: number, final: 'open' | 'closed'): void {
    if (this.motion) this.halt();
    if (target === this.position) {
      this.value = final;
      this.publish();
      return;
    }
    const travel = this.hint('travel_ms', 5000);
    const span = this.range.max - this.range.min || 1;
    this.motion = {
      from: this.position,
      to: target,
      final,
      startedAt: Date.now(),
      durationMs: Math.max(1, (Math.abs(target - this.position) / span) * travel),
    };
    this.value = target > this.position ? 'opening' : 'closing';
    this.publish();
    this.schedule();
  }

  private schedule(): void {
    const m = this.motion;
    if (!m) return;
    const remaining = m.startedAt + m.durationMs - Date.now();
    m.timer = this.timers.after(Math.max(0, Math.min(this.hint('tick_ms', 500), remaining)), () => this.tick());
  }

  private tick(): void {
    const m = this.motion;
    if (!m) return;
    if (Date.now() >= m.startedAt + m.durationMs) {
      this.motion = undefined;
      this.position = m.to;
      this.value = m.final;
    } else {
      this.position = this.positionNow(m);
      this.schedule();
    }
    this.publish();
  }

  /** Freeze where the door is now. */
  private halt(): void {
    const m = this.motion!;
    this.timers.cancel(m.timer);
    this.motion = undefined;
    this.position = this.positionNow(m);
    this.value = 'stopped';
  }

  private positionNow(m: NonNullable<CoverBehaviour['motion']>): number {
    const frac = Math.min(1, (Date.now() - m.startedAt) / m.durationMs);
    const step = this.range.step ?? 1;
    const pos = Math.round((m.from + (m.to - m.from) * frac) / step) * step;
    return clamp(roundTo(pos, 6), Math.min(m.from, m.to), Math.max(m.from, m.to));
  }
}

export class ClimateBehaviour extends Behaviour {
  private mode: string;
  private target: number;
  private current: number;
  private action: string;
  private readonly ambient: number;
  private readonly range: Range;
  private readonly modes?: string[];

  constructor(entity: Entity, host: BehaviourHost) {
    super(entity, host);
    this.range = entity.ranges.temperature ?? { min: 7, max: 35, step: 0.5 };
    this.modes = entity.options.mode?.length ? entity.options.mode : undefined;
    const modeRaw = this.initialMain('mode', 'state');
    this.mode = typeof modeRaw === 'string' ? modeRaw : this.modes?.includes('heat') || !this.modes ? 'heat' : this.modes[0]!;
    const target = toNumber(this.initialAttr('temperature', 'target', 'target_temperature')) ?? toNumber(this.sim.target) ?? 20;
    this.target = clamp(target, this.range.min, this.range.max);
    this.current = toNumber(this.initialAttr('current_temperature', 'current')) ?? toNumber(this.sim.current) ?? this.target - 1;
    this.ambient = this.hint('ambient', this.current);
    this.action = this.decide();
  }

  snapshot(): Record<string, unknown> {
    return { value: this.mode, temperature: this.target, current_temperature: this.current, action: this.action };
  }

  override wire(): WireState {
    return {
      value: this.mode,
      attributes: {
        mode: this.mode,
        temperature: this.target,
        target_temperature: this.target,
        current_temperature: this.current,
        action: this.action,
      },
    };
  }

  override reject(cmd: Command): string | undefined {
    if (cmd.action === 'set_temperature') return outside('temperature', cmd.temperature, this.range);
    if (cmd.action === 'set_mode' && this.modes && !this.modes.includes(cmd.mode)) {
      return `mode ${JSON.stringify(cmd.mode)} is not one of ${this.modes.join(', ')}`;
    }
    return undefined;
  }

  override apply(cmd: Command): void {
    if (cmd.action === 'set_mode') this.mode = cmd.mode;
    else if (cmd.action === 'set_temperature') this.target = cmd.temperature;
    this.action = this.decide();
    this.publish();
  }

  override start(): void {
    this.timers.every(this.hint('interval_ms', 5000), () => this.tick());
  }

  private tick(): void {
    const rate = this.hint('rate', 0.1);
    if (this.action === 'heating') this.current = Math.min(this.target, this.current + rate);
    else if (this.action === 'cooling') this.current = Math.max(this.target, this.current - rate);
    else if (this.current !== this.ambient) {
      const d = this.ambient - this.current;
      this.current += Math.sign(d) * Math.min(Math.abs(d), rate / 2);
    }
    this.current = roundTo(this.current, 2);
    this.action = this.decide();
    this.publish();
  }

  /** heating / cooling / idle / off, with a little hysteresis like a real thermostat. */
  private decide(): string {
    if (this.mode === 'off') return 'off';
    const h = this.hint('hysteresis', 0.2);
    const heats = ['heat', 'auto', 'heat_cool'].includes(this.mode);
    const cools = ['cool', 'auto', 'heat_cool'].includes(this.mode);
    if (heats && (this.current < this.target - h || (this.action === 'heating' && this.current < this.target))) return 'heating';
    if (cools && (this.current > this.target + h || (this.action === 'cooling' && this.current > this.target))) return 'cooling';
    return 'idle';
  }
}

export class NumberBehaviour extends Behaviour {
  private value: number;
  private readonly range: Range;

  constructor(entity: Entity, host: BehaviourHost) {
    super(entity, host);
    this.range = entity.ranges.value ?? { min: 0, max: 100 };
    this.value = clamp(toNumber(this.initialMain('value', 'state')) ?? this.range.min, this.range.min, this.range.max);
  }

  snapshot(): Record<string, unknown> {
    return { value: this.value };
  }

  override wire(): WireState {
    return { value: this.value, attributes: {} };
  }

  override reject(cmd: Command): string | undefined {
    return cmd.action === 'set_value' ? outside('value', cmd.value, this.range) : undefined;
  }

  override apply(cmd: Command): void {
    if (cmd.action === 'set_value') this.value = cmd.value;
    this.publish();
  }
}

export class SelectBehaviour extends Behaviour {
  private value: string | undefined;
  private readonly choices: string[];

  constructor(entity: Entity, host: BehaviourHost) {
    super(entity, host);
    this.choices = entity.options.value ?? entity.options.option ?? [];
    const initial = this.initialMain('value', 'state');
    this.value = initial !== undefined && initial !== null ? String(initial) : this.choices[0];
  }

  snapshot(): Record<string, unknown> {
    return { value: this.value };
  }

  override wire(): WireState {
    return { value: this.value, attributes: {} };
  }

  override reject(cmd: Command): string | undefined {
    if (cmd.action === 'select_option' && this.choices.length && !this.choices.includes(cmd.option)) {
      return `option ${JSON.stringify(cmd.option)} is not one of ${this.choices.join(', ')}`;
    }
    return undefined;
  }

  override apply(cmd: Command): void {
    if (cmd.action === 'select_option') this.value = cmd.option;
    this.publish();
  }
}

export class ButtonBehaviour extends Behaviour {
  private presses = 0;
  private lastPressAt?: number;

  snapshot(): Record<string, unknown> {
    return { presses: this.presses, lastPressAt: this.lastPressAt };
  }

  override apply(cmd: Command): void {
    if (cmd.action !== 'press') return;
    this.presses++;
    this.lastPressAt = Date.now();
    this.host.log.info({ entity: this.entity.id, presses: this.presses }, 'button pressed');
  }
}

// ---------------------------------------------------------------------------
// Sensors
// ---------------------------------------------------------------------------

export class SensorBehaviour extends Behaviour {
  private value: number | string | null;

  constructor(entity: Entity, host: BehaviourHost) {
    super(entity, host);
    const min = toNumber(this.sim.min);
    const max = toNumber(this.sim.max);
    const raw = this.initialMain('value', 'state');
    const n = toNumber(raw);
    if (n !== undefined) this.value = this.round(n);
    else if (raw !== undefined && raw !== null) this.value = String(raw);
    else this.value = min !== undefined && max !== undefined ? this.round((min + max) / 2) : (min ?? max ?? 0);
  }

  snapshot(): Record<string, unknown> {
    return { value: this.value };
  }

  override wire(): WireState {
    return { value: this.value, attributes: {} };
  }

  override start(): void {
    this.timers.every(this.hint('interval_ms', 5000), () => {
      if (typeof this.value === 'number') {
        const drift = this.hint('drift', 0);
        const next = this.value + (Math.random() * 2 - 1) * drift;
        this.value = this.round(clamp(next, this.hint('min', -Infinity), this.hint('max', Infinity)));
      }
      this.publish();
    });
  }

  private round(n: number): number {
    return roundTo(n, Math.max(0, Math.min(10, Math.round(this.hint('decimals', 1)))));
  }
}

export class BinarySensorBehaviour extends Behaviour {
  private on: boolean;

  constructor(entity: Entity, host: BehaviourHost) {
    super(entity, host);
    this.on = this.logical(this.initialMain('value', 'state'), 'off') === 'on';
  }

  snapshot(): Record<string, unknown> {
    return { value: this.on };
  }

  override wire(): WireState {
    // With a value path: JSON booleans, like Zigbee2MQTT's occupancy; otherwise the report word.
    return { value: this.entity.valuePath ? this.on : this.word(this.on ? 'on' : 'off'), attributes: {} };
  }

  override start(): void {
    this.timers.every(this.hint('interval_ms', 5000), () => {
      const next = Math.random() < this.hint('probability', 0.2);
      if (next === this.on) return;
      this.on = next;
      this.publish();
    });
  }
}

export class CameraBehaviour extends Behaviour {
  private frames = 0;
  private lastFrameAt?: number;
  private lastBytes = 0;
  private drawing = false;
  /** Bumped by pause(): a frame still being drawn from before is dropped. */
  private epoch = 0;

  snapshot(): Record<string, unknown> {
    return { frames: this.frames, lastFrameAt: this.lastFrameAt, bytes: this.lastBytes };
  }

  override async announce(): Promise<void> {
    await this.frame();
  }

  override start(): void {
    this.timers.every(this.hint('interval_ms', 5000), () => {
      if (this.drawing) return;
      this.frame().catch((err: unknown) => this.host.log.warn({ entity: this.entity.id, err: errorOf(err) }, 'camera frame failed'));
    });
  }

  override pause(): void {
    super.pause();
    this.epoch++;
  }

  private async frame(): Promise<void> {
    const topic = this.entity.stateTopic;
    if (!topic) return;
    const epoch = this.epoch;
    this.drawing = true;
    let jpeg: Buffer;
    try {
      const label = typeof this.sim.label === 'string' ? this.sim.label : this.entity.name;
      jpeg = await drawCameraFrame(new Date(), { label });
    } finally {
      this.drawing = false;
    }
    if (epoch !== this.epoch) return;
    this.frames++;
    this.lastFrameAt = Date.now();
    this.lastBytes = jpeg.length;
    await this.host.publishRaw(topic, this.entity.imageEncoding === 'b64' ? jpeg.toString('base64') : jpeg);
  }
}

/**
 * A robot vacuum: docked until started; cleaning drains its battery, docking
 * charges it; return_to_base drives home first (returning, then docked).
 * Reports its activity, battery_level and fan_speed (Home Assistant's vacuum
 * state: {"state": "cleaning", "battery_level": 61, "fan_speed": "max"}).
 */
export class VacuumBehaviour extends Behaviour {
  private value: string;
  private battery: number;
  private fanSpeed?: string;
  private trip?: NodeJS.Timeout;

  constructor(entity: Entity, host: BehaviourHost) {
    super(entity, host);
    this.value = this.logical(this.initialMain('state', 'value'), 'docked');
    this.battery = clamp(toNumber(this.initialAttr('battery_level', 'battery')) ?? this.hint('battery', 100), 0, 100);
    const speeds = entity.options.fan_speed ?? [];
    const wanted = this.initialAttr('fan_speed');
    this.fanSpeed = typeof wanted === 'string' && speeds.includes(wanted) ? wanted : speeds[0];
  }

  snapshot(): Record<string, unknown> {
    return { value: this.value, battery_level: this.battery, fan_speed: this.fanSpeed };
  }

  override wire(): WireState {
    const attributes: Record<string, unknown> = {};
    if ('battery_level' in this.entity.attributes) attributes.battery_level = Math.round(this.battery);
    if ('fan_speed' in this.entity.attributes && this.fanSpeed !== undefined) attributes.fan_speed = this.fanSpeed;
    return { value: this.word(this.value), attributes };
  }

  override reject(cmd: Command): string | undefined {
    if (cmd.action === 'set_fan_speed' && !(this.entity.options.fan_speed ?? []).includes(cmd.fan_speed)) return `unknown fan speed ${cmd.fan_speed}`;
    if ((cmd.action === 'start' || cmd.action === 'clean_spot') && this.battery < 5) return 'battery too low to clean';
    return undefined;
  }

  override apply(cmd: Command): void {
    switch (cmd.action) {
      case 'start':
      case 'clean_spot':
        this.go('cleaning');
        break;
      case 'pause':
        this.go(this.value === 'cleaning' || this.value === 'returning' ? 'paused' : this.value);
        break;
      case 'stop':
        this.go(this.value === 'docked' ? 'docked' : 'idle');
        break;
      case 'return_to_base':
        if (this.value === 'docked') break;
        this.go('returning');
        this.dockLater();
        break;
      case 'locate':
        this.host.log.info({ entity: this.entity.id }, 'vacuum: "I am here!"');
        return;
      case 'set_fan_speed':
        this.fanSpeed = cmd.fan_speed;
        break;
    }
    this.publish();
  }

  override start(): void {
    // Cleaning drains, docked charges; it goes home on its own when the battery runs low.
    this.timers.every(this.hint('interval_ms', 5000), () => {
      const before = Math.round(this.battery);
      if (this.value === 'cleaning') this.battery = Math.max(0, this.battery - this.hint('drain', 2));
      else if (this.value === 'docked') this.battery = Math.min(100, this.battery + this.hint('charge', 5));
      if (this.value === 'cleaning' && this.battery < 15) {
        this.go('returning');
        this.dockLater();
      }
      if (Math.round(this.battery) !== before) this.publish();
    });
  }

  private go(value: string): void {
    if (value !== 'returning') {
      this.timers.cancel(this.trip);
      this.trip = undefined;
    }
    this.value = value;
  }

  private dockLater(): void {
    this.trip = this.timers.after(this.hint('travel_ms', 3000), () => {
      this.go('docked');
      this.publish();
    });
  }
}

/**
 * A siren: on with a tone, volume and duration when it takes them; it falls
 * silent by itself when the duration (in seconds) runs out.
 */
export class SirenBehaviour extends SwitchBehaviour {
  private tone?: string;
  private volume?: number;
  private silence?: NodeJS.Timeout;

  override snapshot(): Record<string, unknown> {
    return { value: this.on ? 'on' : 'off', tone: this.tone, volume_level: this.volume };
  }

  override wire(): WireState {
    const attributes: Record<string, unknown> = {};
    if ('tone' in this.entity.attributes && this.tone !== undefined) attributes.tone = this.tone;
    if ('volume_level' in this.entity.attributes && this.volume !== undefined) attributes.volume_level = this.volume;
    return { value: this.word(this.on ? 'on' : 'off'), attributes };
  }

  override reject(cmd: Command): string | undefined {
    if (cmd.action === 'turn_on' && cmd.tone !== undefined && !(this.entity.options.tone ?? []).includes(cmd.tone)) return `unknown tone ${cmd.tone}`;
    return undefined;
  }

  override apply(cmd: Command): void {
    this.timers.cancel(this.silence);
    this.silence = undefined;
    if (cmd.action === 'turn_on') {
      this.on = true;
      if (cmd.tone !== undefined) this.tone = cmd.tone;
      if (cmd.volume !== undefined) this.volume = cmd.volume;
      const seconds = cmd.duration ?? this.hint('duration_s', 0);
      if (seconds > 0) {
        this.silence = this.timers.after(Math.min(seconds, 600) * 1000, () => {
          this.on = false;
          this.publish();
        });
      }
    } else if (cmd.action === 'turn_off') this.on = false;
    this.publish();
  }
}

/** A kind the simulator only logs commands for (scenes, messages, updates, trackers...). */
export class InertBehaviour extends Behaviour {
  private commands = 0;

  snapshot(): Record<string, unknown> {
    return { commands: this.commands };
  }

  override apply(cmd: Command): void {
    this.commands++;
    this.host.log.info({ entity: this.entity.id, action: cmd.action }, `${this.entity.kind} command`);
  }
}

// ---------------------------------------------------------------------------

const BY_KIND: Record<Entity['kind'], new (entity: Entity, host: BehaviourHost) => Behaviour> = {
  sensor: SensorBehaviour,
  binary_sensor: BinarySensorBehaviour,
  camera: CameraBehaviour,
  switch: SwitchBehaviour,
  light: LightBehaviour,
  cover: CoverBehaviour,
  lock: LockBehaviour,
  climate: ClimateBehaviour,
  number: NumberBehaviour,
  select: SelectBehaviour,
  button: ButtonBehaviour,
  fan: FanBehaviour,
  valve: CoverBehaviour,
  alarm_control_panel: AlarmBehaviour,
  scene: InertBehaviour,
  vacuum: VacuumBehaviour,
  lawn_mower: InertBehaviour,
  siren: SirenBehaviour,
  device_tracker: InertBehaviour,
  event: InertBehaviour,
  update: InertBehaviour,
  humidifier: SwitchBehaviour,
  water_heater: InertBehaviour,
  text: InertBehaviour,
  notify: InertBehaviour,
  image: CameraBehaviour,
};

export function createBehaviour(entity: Entity, host: BehaviourHost): Behaviour {
  return new BY_KIND[entity.kind](entity, host);
}

// ---------------------------------------------------------------------------

function toNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return undefined;
}

function clamp(n: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, n));
}

function roundTo(n: number, decimals: number): number {
  const f = 10 ** decimals;
  return Math.round(n * f) / f;
}

function outside(name: string, n: number, range: Range): string | undefined {
  return n < range.min || n > range.max ? `${name} ${n} is outside ${range.min}..${range.max}` : undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function fromDoc(doc: Record<string, unknown>, path: string | undefined, keys: string[]): unknown {
  if (path) {
    const v = readJsonPath(doc, path);
    if (v !== undefined) return v;
  }
  for (const key of keys) if (doc[key] !== undefined) return doc[key];
  return undefined;
}
