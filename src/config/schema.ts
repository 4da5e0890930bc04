// The one configuration object, as a JSON Schema. Defaults live here so that
// the file, the environment and the flags all mean the same thing.

/** agent.max_actions_per_turn's default: more than one person's request needs (a group call is one action). */
export const DEFAULT_MAX_ACTIONS_PER_TURN = 25;

/** The discovery sources' default topic prefixes. */
export const DISCOVERY_PREFIXES = { homeassistant: 'homeassistant', zigbee2mqtt: 'zigbee2mqtt', homie: 'homie' } as const;

/**
 * A discovery prefix as every part reads it: without trailing slashes (`zigbee2mqtt/` is `zigbee2mqtt`), the
 * default when nothing is left. loadConfig writes each prefix so once; the adapter factories and the topics no entity
 * may read or command (discovery/index.ts) read it through this too, so that they agree on which topics are the
 * source's whatever config they are given.
 */
export function discoveryPrefix(source: keyof typeof DISCOVERY_PREFIXES, prefix: string | undefined): string {
  return (prefix ?? '').replace(/\/+$/, '') || DISCOVERY_PREFIXES[source];
}

export const configSchema = {
  $id: 'hearth-config',
  type: 'object',
  additionalProperties: false,
  properties: {
    mqtt: {
      type: 'object',
      additionalProperties: false,
      properties: {
        url: {
          type: 'string',
          pattern: '^(mqtts?|wss?|tcp|ssl)://[^,]+(,\\s*(mqtts?|wss?|tcp|ssl)://[^,]+)*$',
          description:
            'Broker URL, or the nodes of one clustered broker comma-separated (mqtt://a:1883,mqtt://b:1883: on a lost connection Hearth moves to the next node). Absent: start the embedded broker and use it.',
        },
        username: { type: 'string' },
        password: { type: 'string' },
        clientId: { type: 'string', minLength: 1, maxLength: 64 },
        ca: { type: 'string', description: 'Path to a CA certificate (PEM) for mqtts:// and wss://.' },
        cert: { type: 'string', description: 'Path to a client certificate (PEM).' },
        key: { type: 'string', description: 'Path to the client key (PEM).' },
        rejectUnauthorized: { type: 'boolean', default: true },
        protocolVersion: { enum: [3, 4, 5], default: 4 },
        keepalive: { type: 'integer', minimum: 0, maximum: 65535, default: 30 },
        statusTopic: {
          type: 'string',
          minLength: 1,
          maxLength: 200,
          pattern: '^[^#+]+$',
          default: 'hearth/status',
          description:
            'Where the daemon says (retained) that it serves this broker, for Hearth processes elsewhere. One site of a shared broker puts it under its own topics (site-a/hearth/status).',
        },
        reconnectMinMs: { type: 'integer', minimum: 50, default: 500 },
        reconnectMaxMs: { type: 'integer', minimum: 100, default: 30000 },
        sendWaitMs: {
          type: 'integer',
          minimum: 0,
          maximum: 60000,
          default: 0,
          description:
            'How long a call waits for a lost broker connection to come back (a clustered broker moving to another node) before it answers "the MQTT broker is not connected; nothing was sent". 0: at once.',
        },
        embedded: {
          type: 'object',
          additionalProperties: false,
          properties: {
            host: { type: 'string', default: '127.0.0.1' },
            port: { type: 'integer', minimum: 0, maximum: 65535, default: 1883 },
            allowAnonymous: {
              type: 'boolean',
              description:
                'Let clients without a user name connect (they may still never publish on a command topic). Default: true on a loopback host; on any other host it must stay off and devices use accounts.',
            },
            accounts: {
              type: 'array',
              maxItems: 1000,
              description: 'Device (or source) credentials for the embedded broker; put passwords in secrets.yaml.',
              items: {
                type: 'object',
                additionalProperties: false,
                required: ['username', 'password'],
                properties: {
                  username: { type: 'string', minLength: 1, maxLength: 128, not: { const: 'hearth' } },
                  password: { type: 'string', minLength: 12, maxLength: 256 },
                  clientIds: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 128 }, maxItems: 100 },
                  publish: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 512 }, maxItems: 200 },
                  subscribe: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 512 }, maxItems: 200 },
                },
              },
              default: [],
            },
          },
          default: {},
        },
      },
      default: {},
    },
    devices: {
      type: 'object',
      additionalProperties: false,
      properties: {
        paths: {
          type: 'array',
          items: { type: 'string', minLength: 1 },
          description: 'Device files or folders of *.yaml files.',
        },
        watch: {
          type: 'boolean',
          default: true,
          description: 'Reload the device files when they change (hearth start, hearth mcp); a file broken mid-edit keeps its last good version.',
        },
      },
      default: {},
    },
    discovery: {
      type: 'object',
      additionalProperties: false,
      properties: {
        maxEntities: { type: 'integer', minimum: 1, maximum: 20000, default: 5000, description: 'Most entities kept from one discovery source.' },
        maxEntitiesPerDevice: { type: 'integer', minimum: 1, maximum: 5000, default: 256, description: 'Most entities one discovered device may announce.' },
        announcementsPerSecond: {
          type: 'number',
          exclusiveMinimum: 0,
          maximum: 10000,
          default: 50,
          description:
            'How many new or changed entities one device may announce per second on average (ten times that at once); a change refused for it is read once the device slows down.',
        },
        rememberDays: {
          type: 'integer',
          minimum: 1,
          default: 90,
          description:
            'Forget the name, rank and topics of an entity not seen for this many days (its tool name, command and state topics are then free again).',
        },
        rememberMax: { type: 'integer', minimum: 100, default: 20000, description: 'Most entities whose names are remembered; the longest unseen go first.' },
        maxDevices: {
          type: 'integer',
          minimum: 1,
          maximum: 100000,
          default: 10000,
          description:
            'Most discovered devices given an id from their name (kept in the database for good); past it a new device gets the id of its own identity (zigbee2mqtt_<IEEE address>), not stored.',
        },
        homeassistant: {
          type: 'object',
          additionalProperties: false,
          properties: {
            enabled: { type: 'boolean', default: true },
            prefix: { type: 'string', minLength: 1, default: 'homeassistant' },
            /** Publish `online` on <prefix>/status at connect, so devices announce themselves again. */
            birth: { type: 'boolean', default: true },
          },
          default: {},
        },
        zigbee2mqtt: {
          type: 'object',
          additionalProperties: false,
          properties: {
            enabled: { type: 'boolean', default: true },
            prefix: { type: 'string', minLength: 1, default: 'zigbee2mqtt' },
          },
          default: {},
        },
        homie: {
          type: 'object',
          additionalProperties: false,
          properties: {
            enabled: { type: 'boolean', default: true },
            prefix: { type: 'string', minLength: 1, default: 'homie' },
          },
          default: {},
        },
      },
      default: {},
    },
    demo: {
      type: 'boolean',
      description: 'Load the demo home and run its simulator. Default: on with the embedded broker.',
    },
    database: {
      type: 'object',
      additionalProperties: false,
      properties: {
        path: { type: 'string', minLength: 1, default: 'hearth.db' },
      },
      default: {},
    },
    audit: {
      type: 'object',
      additionalProperties: false,
      properties: {
        digestFile: {
          type: 'string',
          minLength: 1,
          description:
            'Write the audit digest (row count + last hash) here after each call, ideally somewhere the database is not, so truncation is detectable.',
        },
        keyFile: {
          type: 'string',
          minLength: 1,
          description:
            'A secret key (made on first start when missing) that signs the digest file, so a rewritten log cannot come with a matching digest. Keep it, and a copy, away from the database.',
        },
        durability: {
          type: 'string',
          enum: ['full', 'grouped'],
          default: 'full',
          description:
            'full: every audit commit waits for its fsync, so the pending row is on disk before the command is sent, even across a power cut. grouped: the row is in the write-ahead log before the command is sent (a crash of Hearth loses nothing) and is fsynced on a worker thread while the command travels, one fsync shared by concurrent calls; about half the latency, but a power cut can lose the newest rows.',
        },
      },
      default: {},
    },
    history: {
      type: 'object',
      additionalProperties: false,
      properties: {
        budgetMb: {
          type: 'number',
          minimum: 1,
          default: 1024,
          description:
            'The database may use this many MiB; entity history is pruned to stay within it (the oldest raw changes first, then the oldest five-minute summaries).',
        },
        minRawHours: {
          type: 'number',
          minimum: 0,
          maximum: 87600,
          default: 24,
          description: 'Raw changes younger than this are kept even over the budget.',
        },
        rollupDays: {
          type: 'number',
          exclusiveMinimum: 0,
          maximum: 3650,
          default: 365,
          description: 'Five-minute summaries of numbers (long charts) are kept this many days, within the budget.',
        },
        retentionDays: {
          type: 'number',
          exclusiveMinimum: 0,
          maximum: 3650,
          description: 'Raw changes older than this go even within the budget (unset: as long as the budget allows).',
        },
      },
      default: {},
    },
    http: {
      type: 'object',
      additionalProperties: false,
      properties: {
        host: { type: 'string', default: '127.0.0.1' },
        port: { type: 'integer', minimum: 0, maximum: 65535, default: 8080 },
        mcpPath: {
          type: 'string',
          pattern: '^(/[A-Za-z0-9_./-]*)?$',
          default: '/mcp',
          description: 'Where MCP over Streamable HTTP is served; empty turns it off.',
        },
        trustedOrigins: {
          type: 'array',
          items: { type: 'string', pattern: '^https?://[^/\\s?#]+$' },
          default: [],
          description:
            'Origins besides http://<host> whose pages may use the API, e.g. https://home.example.org behind a TLS reverse proxy (scheme://host[:port], no path).',
        },
        oauthDocumentHosts: {
          type: 'array',
          items: { type: 'string', pattern: '^[A-Za-z0-9.-]{1,253}$|^\\[[0-9A-Fa-f:.]+\\]$' },
          default: [],
          description:
            "Host names whose MCP client metadata documents Hearth may fetch although they resolve to this machine or the house's network (an app hosted at home); any other host must be a public address.",
        },
        auth: {
          type: 'boolean',
          default: true,
          description: 'Require a bearer token (hearth token create). false is allowed only on a loopback http.host.',
        },
        events: {
          type: 'object',
          additionalProperties: false,
          properties: {
            maxBufferedBytes: {
              type: 'integer',
              minimum: 4096,
              maximum: 268435456,
              default: 1048576,
              description: 'An event stream (GET /api/events, prompt streams) whose client stops reading is dropped once this many bytes wait for it.',
            },
            maxStreamsPerToken: {
              type: 'integer',
              minimum: 1,
              maximum: 1000,
              default: 8,
              description: 'Open event streams one token may hold; one more is refused with 429.',
            },
          },
          default: {},
        },
      },
      default: {},
    },
    wyoming: {
      type: 'object',
      additionalProperties: false,
      description: 'A Wyoming conversation service for voice satellites (Home Assistant voice pipelines): off unless port is set.',
      properties: {
        host: { type: 'string', default: '127.0.0.1', description: 'Where to listen; 0.0.0.0 for satellites and Home Assistant on other machines.' },
        port: { type: 'integer', minimum: 0, maximum: 65535, description: 'Serve Wyoming on this TCP port (10700 is usual). Absent: off.' },
        streaming: {
          type: 'boolean',
          default: false,
          description:
            'Advertise supports_handled_streaming and answer with handled-start/-chunk/-stop. Off by default: Home Assistant reads only handled/not-handled.',
        },
        turnTimeoutMs: {
          type: 'integer',
          minimum: 1000,
          maximum: 600000,
          default: 30000,
          description: 'A turn still running after this is interrupted and answered not-handled.',
        },
        satellites: {
          type: 'array',
          default: [],
          description: 'Who may talk to Hearth over Wyoming: each is the principal voice:<name>, recognised by its address, speaking from its area.',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['name', 'address'],
            properties: {
              name: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' },
              address: {
                type: 'string',
                pattern: '^[0-9A-Fa-f:.]{2,45}$',
                description: "The IP address its connections come from (Home Assistant's, for satellites it relays).",
              },
              area: { type: 'string', minLength: 1, maxLength: 64 },
              secret: {
                type: 'string',
                minLength: 16,
                maxLength: 200,
                description:
                  'Needed when several satellites share an address (Home Assistant relaying them): a client proves it speaks for this satellite by sending context.satellite (its name) and context.satellite_secret with each transcript. Without one, the address speaks as its one satellite without a secret.',
              },
            },
          },
        },
      },
      default: {},
    },
    tools: {
      type: 'object',
      additionalProperties: false,
      properties: {
        shape: { enum: ['auto', 'per-entity', 'grouped'], default: 'auto' },
        groupAbove: {
          type: 'integer',
          minimum: 1,
          default: 40,
          description: 'With shape auto: group once a home has more entities than this.',
        },
      },
      default: {},
    },
    agent: {
      type: 'object',
      additionalProperties: false,
      properties: {
        engine: {
          enum: ['builtin', 'jan'],
          default: 'builtin',
          description: 'builtin: Hearth runs the model loop; jan: drive a `jan` runtime (JAN_BIN or jan on PATH).',
        },
        provider: {
          enum: ['intent', 'openai'],
          default: 'intent',
          description: 'intent: the offline sentence matcher (no network); openai: any OpenAI-compatible server.',
        },
        baseUrl: { type: 'string', pattern: '^https?://', default: 'http://127.0.0.1:1337/v1' },
        apiKey: { type: 'string' },
        model: { type: 'string', minLength: 1 },
        vision: { type: 'boolean', default: true, description: 'Send camera images to the model.' },
        maxRounds: { type: 'integer', minimum: 1, maximum: 50, default: 8 },
        maxActionsPerTurn: {
          type: 'integer',
          minimum: 1,
          maximum: 1000,
          default: DEFAULT_MAX_ACTIONS_PER_TURN,
          description: 'Actions (actuator tool calls) one agent turn may make; past it the rest are refused, audited, and the turn says so.',
        },
        timeoutMs: { type: 'integer', minimum: 1000, default: 120000 },
        janBin: { type: 'string', minLength: 1 },
      },
      default: {},
    },
    intent: {
      type: 'object',
      additionalProperties: false,
      properties: {
        language: {
          type: 'string',
          pattern: '^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$',
          default: 'en',
          description: 'The folder of shipped sentences (sentences/<language>/) the offline model understands.',
        },
        sentences: {
          type: 'string',
          minLength: 1,
          description: 'A folder of your own sentence files (Home Assistant custom-sentence YAML): added to the shipped ones, reloaded when they change.',
        },
      },
      default: {},
    },
    log: {
      type: 'object',
      additionalProperties: false,
      properties: {
        level: { enum: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], default: 'info' },
        pretty: { enum: ['auto', true, false], default: 'auto' },
      },
      default: {},
    },
  },
} as const;

export interface HearthConfig {
  mqtt: {
    url?: string;
    username?: string;
    password?: string;
    clientId?: string;
    ca?: string;
    cert?: string;
    key?: string;
    rejectUnauthorized: boolean;
    protocolVersion: 3 | 4 | 5;
    keepalive: number;
    statusTopic: string;
    reconnectMinMs: number;
    reconnectMaxMs: number;
    sendWaitMs: number;
    embedded: {
      host: string;
      port: number;
      allowAnonymous?: boolean;
      accounts: Array<{ username: string; password: string; clientIds?: string[]; publish?: string[]; subscribe?: string[] }>;
    };
  };
  devices: { paths?: string[]; watch: boolean };
  discovery: {
    maxEntities: number;
    maxEntitiesPerDevice: number;
    announcementsPerSecond: number;
    rememberDays: number;
    rememberMax: number;
    maxDevices: number;
    homeassistant: { enabled: boolean; prefix: string; birth: boolean };
    zigbee2mqtt: { enabled: boolean; prefix: string };
    homie: { enabled: boolean; prefix: string };
  };
  demo?: boolean;
  database: { path: string };
  audit: { digestFile?: string; keyFile?: string; durability: 'full' | 'grouped' };
  history: { budgetMb: number; minRawHours: number; rollupDays: number; retentionDays?: number };
  http: {
    host: string;
    port: number;
    auth: boolean;
    mcpPath: string;
    trustedOrigins: string[];
    oauthDocumentHosts: string[];
    events: { maxBufferedBytes: number; maxStreamsPerToken: number };
  };
  wyoming: { host: string; port?: number; streaming: boolean; turnTimeoutMs: number; satellites: WyomingSatellite[] };
  tools: { shape: 'auto' | 'per-entity' | 'grouped'; groupAbove: number };
  agent: {
    engine: 'builtin' | 'jan';
    provider: 'intent' | 'openai';
    baseUrl: string;
    apiKey?: string;
    model?: string;
    vision: boolean;
    maxRounds: number;
    maxActionsPerTurn: number;
    timeoutMs: number;
    janBin?: string;
  };
  intent: { language: string; sentences?: string };
  log: { level: string; pretty: 'auto' | boolean };
}

/** A voice satellite allowed to use the Wyoming service (config `wyoming.satellites`). */
export interface WyomingSatellite {
  name: string;
  address: string;
  area?: string;
  /** Proves a client speaks for this satellite at a shared address (context.satellite_secret). */
  secret?: string;
}
