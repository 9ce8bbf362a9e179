import { z } from 'zod';

/** The one place environment variables are read. A bad value stops start-up naming the variable. */
const emptyAsUnset = (v: unknown) => (v === '' ? undefined : v);
const optionalText = z.preprocess(emptyAsUnset, z.string().min(1).optional());
/** The driver accepts only these two schemes; a space anywhere would make it fail later, with a stack. */
const optionalMongoUrl = z.preprocess(
  emptyAsUnset,
  z
    .string()
    .regex(
      /^mongodb(\+srv)?:\/\/[^\s/?#]+(\/[^\s]*)?$/,
      'must be a MongoDB connection string: mongodb://host[:port][,host…]/database[?options] or mongodb+srv://…',
    )
    .optional(),
);
/** The schemes the KurrentDB client accepts, and no whitespace (the client's own error would only echo the URL). */
const optionalKurrentUrl = z.preprocess(
  emptyAsUnset,
  z
    .string()
    .regex(
      /^(kurrentdb|kurrent|kdb)(\+discover)?:\/\/[^\s]+$/,
      'must be a KurrentDB connection string: kurrentdb://host:2113[?options] (or kurrent://, kdb://, with +discover for gossip)',
    )
    .optional(),
);
/** The schemes `pg` accepts, and no whitespace (its own error would echo the URL, password included). */
const optionalPostgresUrl = z.preprocess(
  emptyAsUnset,
  z
    .string()
    .regex(
      /^postgres(ql)?:\/\/[^\s]+$/,
      'must be a PostgreSQL connection string: postgres://user[:password]@host[:port]/database[?options]',
    )
    .optional(),
);
const optionalRedisUrl = z.preprocess(
  emptyAsUnset,
  z
    .string()
    .regex(/^rediss?:\/\/[^\s]+$/, 'must be a Redis URL: redis://host:6379[/db] or rediss://…')
    .optional(),
);
const optionalBrokers = z.preprocess(
  emptyAsUnset,
  z
    .string()
    .regex(
      /^\s*(\[[0-9A-Fa-f:.]+\]|[^\s,:[\]]+):\d{1,5}(\s*,\s*(\[[0-9A-Fa-f:.]+\]|[^\s,:[\]]+):\d{1,5})*\s*$/,
      'must be a comma-separated list of Kafka brokers: host:port[,host:port…]',
    )
    .optional(),
);

/** A comma-separated list; `*` alone means any. Entries are trimmed and lower-cased. */
const optionalList = (entry: RegExp, message: string) =>
  z.preprocess(
    emptyAsUnset,
    z
      .string()
      .transform((v) =>
        v
          .split(',')
          .map((item) => item.trim().toLowerCase())
          .filter((item) => item !== ''),
      )
      .pipe(
        z.union([z.tuple([z.literal('*')]), z.array(z.string().regex(entry, message)).min(1, message)], {
          error: message,
        }),
      )
      .optional(),
  );
/** A host name, IPv4 address or bracketed IPv6 address, with an optional port. */
const HOST_ENTRY = /^([a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])(:\d{1,5})?$/;
const ORIGIN_ENTRY =
  /^https?:\/\/([a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])(:\d{1,5})?$/;

export const configSchema = z.object({
  PORT: z.preprocess(emptyAsUnset, z.coerce.number().int().min(0).max(65535).default(8080)),
  HOST: z.preprocess(emptyAsUnset, z.string().min(1).default('127.0.0.1')),
  PULSEBOARD_DATA_DIR: z.preprocess(emptyAsUnset, z.string().min(1).default('./data')),
  /**
   * How much of the embedded read-model file each connection maps into memory, in MiB (0: none, the
   * default). Mapped pages are read without a system call or a copy, and are the OS file cache, counted
   * in the process's resident memory; other pages are read into a 16 MiB page cache per connection.
   */
  PULSEBOARD_SQLITE_MAP_MB: z.preprocess(emptyAsUnset, z.coerce.number().int().min(0).max(1_048_576).default(0)),
  EVENTSTORE_URL: optionalKurrentUrl,
  MONGODB_URL: optionalMongoUrl,
  /** The event log and the read models both on PostgreSQL (not with EVENTSTORE_URL or MONGODB_URL). */
  POSTGRES_URL: optionalPostgresUrl,
  /**
   * A streaming replica of POSTGRES_URL's server that `serve --role api` reads from (only with
   * POSTGRES_URL); the log, the projectors and every write stay on the primary.
   */
  POSTGRES_REPLICA_URL: optionalPostgresUrl,
  REDIS_URL: optionalRedisUrl,
  KAFKA_BROKERS: optionalBrokers,
  PULSEBOARD_RATE_LIMIT: z.preprocess(emptyAsUnset, z.coerce.number().int().min(1).default(60)),
  /** How long one rate check may wait for Redis before the request is served as if Redis were down. */
  PULSEBOARD_REDIS_COMMAND_TIMEOUT_MS: z.preprocess(
    emptyAsUnset,
    z.coerce.number().int().min(10).max(60_000).default(250),
  ),
  /**
   * How often held long-polls, change streams and MCP listens check the read models while no store-wide
   * commit feed is live (PostgreSQL LISTEN, MongoDB change stream); with one live they do not poll.
   */
  PULSEBOARD_COMMIT_POLL_MS: z.preprocess(emptyAsUnset, z.coerce.number().int().min(10).max(3_600_000).default(250)),
  /** initialize, tools/list, ping and notifications on /mcp, per key per 60 s: a budget apart from the requests one. */
  PULSEBOARD_MCP_PROTOCOL_RATE_LIMIT: z.preprocess(emptyAsUnset, z.coerce.number().int().min(1).default(120)),
  /** DNS-rebinding protection of /mcp: the Host names it answers (unset: loopback names and HOST). */
  PULSEBOARD_MCP_ALLOWED_HOSTS: optionalList(
    HOST_ENTRY,
    'must be a comma-separated list of host names (host or host:port, IPv6 in brackets), or *',
  ),
  /** DNS-rebinding protection of /mcp: the browser Origins it answers (unset: loopback origins only). */
  PULSEBOARD_MCP_ALLOWED_ORIGINS: optionalList(
    ORIGIN_ENTRY,
    'must be a comma-separated list of origins (http[s]://host[:port]), or *',
  ),
  /** Browser origins allowed by CORS (http[s]://host[:port], comma-separated, or *); unset: CORS off. */
  PULSEBOARD_CORS_ORIGINS: optionalList(
    ORIGIN_ENTRY,
    'must be a comma-separated list of origins (http[s]://host[:port]), or *',
  ),
  /** /metrics (Prometheus text, unauthenticated): on by default. */
  PULSEBOARD_METRICS: z.preprocess(emptyAsUnset, z.enum(['on', 'off']).default('on')),
  /** Serves /metrics on this port (on HOST) instead of the API port. */
  PULSEBOARD_METRICS_PORT: z.preprocess(emptyAsUnset, z.coerce.number().int().min(0).max(65535).optional()),
  PULSEBOARD_FOLLOWER_PROVIDER: z.preprocess(emptyAsUnset, z.string().min(1).default('followerscope')),
  PULSEBOARD_THESIS_FEED: z.preprocess(emptyAsUnset, z.enum(['on', 'off']).default('on')),
  PULSEBOARD_THESIS_SOURCE_URL: optionalText,
  PULSEBOARD_THESIS_SOURCE_KEY: optionalText,
  /** One read of the thesis source, headers and body together; no retries follow a timeout. */
  PULSEBOARD_THESIS_SOURCE_TIMEOUT_MS: z.preprocess(
    emptyAsUnset,
    z.coerce.number().int().min(100).max(120_000).default(15_000),
  ),
  PULSEBOARD_LOG_LEVEL: z.preprocess(
    emptyAsUnset,
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'silent']).default('info'),
  ),
});

export type Config = z.infer<typeof configSchema>;

export type ConfigResult = { ok: true; config: Config } | { ok: false; reason: string };

export function parseConfig(env: Record<string, string | undefined> = process.env): ConfigResult {
  const known = Object.fromEntries(Object.keys(configSchema.shape).map((k) => [k, env[k]]));
  const parsed = configSchema.safeParse(known);
  if (parsed.success) {
    const { POSTGRES_URL, POSTGRES_REPLICA_URL, EVENTSTORE_URL, MONGODB_URL } = parsed.data;
    if (POSTGRES_REPLICA_URL !== undefined && POSTGRES_URL === undefined)
      return {
        ok: false,
        reason:
          "invalid configuration: POSTGRES_REPLICA_URL: reads from a replica of POSTGRES_URL's server; set POSTGRES_URL too",
      };
    if (POSTGRES_URL !== undefined && (EVENTSTORE_URL !== undefined || MONGODB_URL !== undefined))
      return {
        ok: false,
        reason:
          'invalid configuration: POSTGRES_URL: puts the event log and the read models on PostgreSQL; unset EVENTSTORE_URL and MONGODB_URL',
      };
    return { ok: true, config: parsed.data };
  }
  const reason = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
  return { ok: false, reason: `invalid configuration: ${reason}` };
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const result = parseConfig(env);
  if (!result.ok) {
    console.error(result.reason);
    process.exit(2);
  }
  return result.config;
}
