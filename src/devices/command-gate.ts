// The one place a command leaves for a device. A command may be published
// only on a command topic of the entity the policy decided on, as the
// registry has that entity now (topics are owned: topic-owners.ts), and a
// dangerous word in its payload (dangerous-words.ts) must be the action the
// policy decided on; a payload too long or too deep to judge is not sent.
// Whatever builds the payloads (generator, templates, a stale entity from
// before a reload) is not trusted to get that right: a refused command sends
// nothing at all.
import type { PublishOptions } from '../mqtt/connection.js';
import type { OutgoingMessage } from './commands.js';
import { judgePayload } from './dangerous-words.js';
import type { DeviceRegistry } from './registry.js';

/** Where the gate sends what it lets through: the MQTT connection. */
export interface CommandTransport {
  publish(topic: string, payload: string | Buffer, options?: PublishOptions): Promise<void>;
}

/** What the policy decided on. */
export interface DecidedCommand {
  entityId: string;
  /** The action the policy judged (`unlock` for a "light" whose payload is UNLOCK). */
  action: string;
}

export class CommandRefused extends Error {
  readonly code = 'COMMAND_REFUSED';
}

export class CommandGate {
  constructor(
    private readonly registry: DeviceRegistry,
    private readonly transport: CommandTransport,
  ) {}

  /** Why these messages may not be sent for this decision, or undefined when they may. */
  check(decided: DecidedCommand, messages: readonly OutgoingMessage[]): string | undefined {
    if (!messages.length) return 'there is nothing to send';
    for (const m of messages) {
      const forbidden = this.registry.commandRefusal(m.topic);
      if (forbidden) return `refused at the transport: ${m.topic} is ${forbidden}, which Hearth never publishes on`;
      if (!this.registry.commandsOn(decided.entityId, m.topic)) {
        const owner = this.registry.entities().find((e) => e.id !== decided.entityId && this.registry.commandsOn(e.id, m.topic));
        return `refused at the transport: ${m.topic} is not a command topic of ${decided.entityId}${owner ? ` (it belongs to ${owner.id})` : ''}`;
      }
      const { word, unjudgeable } = judgePayload(m.payload);
      if (unjudgeable) return `refused at the transport: ${unjudgeable} (on ${m.topic})`;
      if (word && word.action !== decided.action) {
        return `refused at the transport: the payload on ${m.topic} says ${word.word}, but the policy judged ${decided.action}`;
      }
    }
    return undefined;
  }

  /** Send every message, or none: throws CommandRefused before sending when any is refused. */
  /** `progress.handedOver` counts the messages the transport took, so a failure can say whether any may have left. */
  async publish(decided: DecidedCommand, messages: readonly OutgoingMessage[], options: PublishOptions, progress = { handedOver: 0 }): Promise<void> {
    const refusal = this.check(decided, messages);
    if (refusal) throw new CommandRefused(refusal);
    for (const m of messages) {
      // Never retained: a retained command would reach the device again whenever it resubscribes, undecided.
      await this.transport.publish(m.topic, m.payload, { ...options, retain: false });
      progress.handedOver++;
    }
  }
}
