// Retained commands planted before discovery. A client may publish a retained UNLOCK on a topic before any lock
// with that command topic is known (nothing gates a topic no entity has yet); the broker keeps it and hands it to
// the lock whenever the lock subscribes, behind the policy's back. So Hearth listens on every command topic of the
// entities it admits: a message the broker says is retained there was planted (Hearth's own commands are never
// retained: the command gate sends them so), and Hearth clears it with an empty retained message, the one way
// MQTT has to delete one, and logs it naming the topic and the entity. The subscription stays while the entity
// does, so a reconnect (which replays retained messages) is swept too. On MQTT 5 it asks for other clients'
// messages only, retain flag as published (MqttConnection.subscribe's `othersOnly`): none of Hearth's own commands
// come back, and a retained message planted while Hearth is connected is cleared at once (on 3.1.1 a broker
// passes it on unmarked, and it is cleared at the next reconnect).
import type { Logger } from '../log.js';
import type { MqttConnection } from '../mqtt/connection.js';
import { isPublishableTopic } from '../mqtt/topic.js';
import { commandTopicsOf } from './commands.js';
import type { DeviceRegistry } from './registry.js';

export class RetainedCommandSweeper {
  /** command topic -> the id of the entity that owns it (the first admitted on it). */
  private owners = new Map<string, string>();
  private readonly onChanged = () => this.update();
  private readonly onMessage = (topic: string, payload: Buffer, retained: boolean) => this.check(topic, payload, retained);

  constructor(
    private readonly registry: DeviceRegistry,
    private readonly connection: MqttConnection,
    private readonly log: Logger,
  ) {
    registry.on('changed', this.onChanged);
    connection.on('message', this.onMessage);
    this.update();
  }

  private update(): void {
    const owners = new Map<string, string>();
    for (const e of this.registry.ranked()) for (const t of commandTopicsOf(e)) if (isPublishableTopic(t) && !owners.has(t)) owners.set(t, e.id);
    const gone = [...this.owners.keys()].filter((t) => !owners.has(t));
    const fresh = [...owners.keys()].filter((t) => !this.owners.has(t));
    this.owners = owners;
    if (gone.length) this.connection.unsubscribe(gone);
    if (fresh.length) this.connection.subscribe(fresh, { othersOnly: true });
  }

  private check(topic: string, payload: Buffer, retained: boolean): void {
    // An empty payload is the deletion itself (ours, echoed back): nothing is kept.
    if (!retained || !payload.length) return;
    const entity = this.owners.get(topic);
    if (!entity) return;
    this.log.warn(
      { topic, entity, bytes: payload.length },
      `a retained message was waiting on ${topic}, the command topic of ${entity}: the device would have taken it as a command that no policy decided; cleared`,
    );
    this.connection.publish(topic, '', { qos: 1, retain: true }).catch((err: unknown) => {
      this.log.error({ err, topic, entity }, `could not clear the retained message on ${topic}: the device may still receive it`);
    });
  }

  stop(): void {
    this.registry.off('changed', this.onChanged);
    this.connection.off('message', this.onMessage);
    if (this.owners.size) this.connection.unsubscribe(this.owners.keys());
    this.owners.clear();
  }
}
