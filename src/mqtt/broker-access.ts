// Who may do what on the embedded broker: the transport half of the policy. Without it any local program
// (or, on a LAN address, anyone) could publish UNLOCK on the lock's command topic and open the door with no
// decision and no audit row. aedes asks these hooks on every CONNECT, PUBLISH and SUBSCRIBE:
// - Hearth's own clients (this process, and other Hearth processes on the same database, which read the
//   credential from the 0600 file beside it) may publish anything;
// - every other client (a device account from the config, or an anonymous client where that is allowed)
//   may never publish on a command topic of a known entity, and an account with `publish` / `subscribe`
//   patterns is held to them (a filter only when every topic it can match is allowed);
// - no other client reads `$` topics (aedes's `$SYS` names every client id), nor connects with a client id a
//   Hearth client uses or used on this broker: the broker would close Hearth's connection to make room for it.
import { STATUS_TOPIC } from './daemon-status.js';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Logger } from '../log.js';
import { filterCovers, isValidFilter, topicMatches } from './topic.js';

export interface BrokerAccount {
  username: string;
  password: string;
  /** When given, the account may connect only with one of these client ids. */
  clientIds?: string[];
  /** When given, the only topics (MQTT filters) the account may publish on. */
  publish?: string[];
  /** When given, the only topic filters the account may subscribe to. */
  subscribe?: string[];
}

export interface BrokerCredential {
  username: string;
  password: string;
}

export interface BrokerAccessOptions {
  /** Hearth's own credential for this run. */
  hearth: BrokerCredential;
  accounts: readonly BrokerAccount[];
  allowAnonymous: boolean;
  /** Whether a topic is a command topic of an entity Hearth knows (the registry's answer, read on every publish). */
  isCommandTopic(topic: string): boolean;
  /** mqtt.status_topic: only Hearth says there that it serves this broker. */
  statusTopic?: string;
  /** mqtt.client_id when set: no other client may use it, even before Hearth first connects. */
  hearthClientId?: string;
  log: Logger;
}

/** The few fields of an aedes client the hooks read. */
export interface BrokerClient {
  id: string;
}

type Role = { kind: 'hearth' } | { kind: 'account'; account: BrokerAccount } | { kind: 'anonymous' };

export class BrokerAccessError extends Error {
  /** MQTT 3.1.1 CONNACK return code (2: identifier rejected, 4: bad user name or password, 5: not authorized). */
  constructor(
    message: string,
    readonly returnCode: 2 | 4 | 5,
  ) {
    super(message);
    this.name = 'BrokerAccessError';
  }
}

/** A fresh credential for Hearth's own clients: 32 random bytes, never written anywhere but a 0600 file. */
export function newHearthCredential(): BrokerCredential {
  return { username: 'hearth', password: randomBytes(32).toString('base64url') };
}

const digest = (s: string | Buffer) => createHash('sha256').update(s).digest();
const same = (a: string | Buffer, b: string | Buffer) => timingSafeEqual(digest(a), digest(b));

/** How many client ids of Hearth's clients the broker keeps reserved (each run of a CLI command uses a new one). */
const MAX_HEARTH_IDS = 10_000;

export class BrokerAccess {
  private readonly roles = new WeakMap<object, Role>();
  /** Refusals are logged once per client and topic, not once per message. */
  private readonly warned = new WeakMap<object, Set<string>>();
  /** Client ids Hearth's clients connected with: another client taking one would push Hearth off its broker. */
  private readonly hearthIds = new Set<string>();

  constructor(private readonly options: BrokerAccessOptions) {
    if (options.hearthClientId) this.hearthIds.add(options.hearthClientId);
  }

  authenticate(client: BrokerClient, username: string | undefined, password: Buffer | undefined): Role {
    const { hearth, accounts, allowAnonymous } = this.options;
    let role: Role | undefined;
    if (username === undefined || username === '') {
      if (!allowAnonymous) throw new BrokerAccessError('this broker needs a user name and password (mqtt.embedded.accounts)', 5);
      role = { kind: 'anonymous' };
    } else if (username === hearth.username) {
      if (!password || !same(password, hearth.password)) throw new BrokerAccessError('bad user name or password', 4);
      role = { kind: 'hearth' };
    } else {
      const account = accounts.find((a) => a.username === username);
      if (!account || !password || !same(password, account.password)) throw new BrokerAccessError('bad user name or password', 4);
      if (account.clientIds && !account.clientIds.includes(client.id)) throw new BrokerAccessError(`client id ${client.id} is not allowed for ${username}`, 5);
      role = { kind: 'account', account };
    }
    if (role.kind === 'hearth') {
      this.hearthIds.delete(client.id);
      this.hearthIds.add(client.id);
      if (this.hearthIds.size > MAX_HEARTH_IDS) this.hearthIds.delete(this.hearthIds.values().next().value!);
    } else if (this.hearthIds.has(client.id)) {
      throw new BrokerAccessError(`client id ${client.id} is Hearth's: only Hearth connects with it`, 2);
    }
    this.roles.set(client, role);
    return role;
  }

  /** Why this client may not publish on this topic, or undefined when it may. */
  publishRefusal(client: BrokerClient | null, topic: string): string | undefined {
    // aedes publishes wills and retained messages of its own with no client.
    if (!client) return undefined;
    const role = this.roles.get(client);
    if (!role) return 'not authenticated';
    if (role.kind === 'hearth') return undefined;
    if (topic === (this.options.statusTopic ?? STATUS_TOPIC))
      return `${topic} is where the Hearth daemon says it serves this broker: only Hearth publishes there`;
    if (this.options.isCommandTopic(topic)) return `${topic} is a command topic: only Hearth publishes there, after its policy decided`;
    if (role.kind === 'account' && role.account.publish && !role.account.publish.some((f) => topicMatches(f, topic)))
      return `${role.account.username} may not publish on ${topic}`;
    return undefined;
  }

  /** Whether this client may subscribe to this filter. */
  maySubscribe(client: BrokerClient, filter: string): boolean {
    const role = this.roles.get(client);
    if (!role) return false;
    if (role.kind === 'hearth') return true;
    if (!isValidFilter(filter)) return false;
    // `$SYS/#` would tell a device every client id, Hearth's too (wildcards at the first level never match `$`).
    if (filter.startsWith('$')) return false;
    if (role.kind === 'account' && role.account.subscribe) return role.account.subscribe.some((f) => filterCovers(f, filter));
    return true;
  }

  /** One warning per client and topic. */
  refused(client: BrokerClient, topic: string, why: string): void {
    let seen = this.warned.get(client);
    if (!seen) this.warned.set(client, (seen = new Set()));
    if (seen.has(topic) || seen.size > 100) return;
    seen.add(topic);
    const role = this.roles.get(client);
    this.options.log.warn(
      { clientId: client.id, topic, who: role?.kind === 'account' ? role.account.username : (role?.kind ?? 'unknown') },
      `broker refused a publish from client ${JSON.stringify(client.id)}: ${why}; the client is disconnected`,
    );
  }
}
