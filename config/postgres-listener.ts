/**
 * One PostgreSQL connection per process and URL for every LISTEN (the event log's appends, the read
 * models' commits, the generation pointer) and for the presence session's advisory locks: 100 API
 * processes hold 100 such connections, not 300. Here, below eventstore/ and readmodels/, so both share it.
 *
 * Each use (a channel's handlers, or a session) is told `failed` once when the connection is lost
 * (its 'error' or 'end') and hears nothing more: its owner reopens on its own backoff, as with a
 * connection of its own, and the first use back connects again and LISTENs on the channels then
 * asked. A use is `live` once its channel's LISTEN has returned on the current connection. The
 * connection ends when its last use closes.
 */
import pg from 'pg';

/** What the shared connection is known by in pg_stat_activity. */
export const LISTENER_APPLICATION_NAME = 'pulseboard-listener';

export type ListenHandlers = {
  live(): void;
  notify(payload: string | undefined): void;
  failed(error: unknown): void;
};

export type ListenerOptions = { connectTimeoutMs?: number };

type Use = { channel: string | null; failed(error: unknown): void; notify?(payload: string | undefined): void };

type Shared = {
  url: string;
  connectTimeoutMs: number;
  uses: Set<Use>;
  client: pg.Client | undefined;
  connecting: Promise<pg.Client> | undefined;
  /** Each channel's LISTEN on the current connection, sent once and awaited by every use of it. */
  listening: Map<string, Promise<unknown>>;
};

const connections = new Map<string, Shared>();

function sharedFor(url: string, options: ListenerOptions): Shared {
  let shared = connections.get(url);
  if (!shared) {
    shared = {
      url,
      connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
      uses: new Set(),
      client: undefined,
      connecting: undefined,
      listening: new Map(),
    };
    connections.set(url, shared);
  }
  return shared;
}

function lost(shared: Shared, client: pg.Client, error: unknown): void {
  if (shared.client !== client) return;
  shared.client = undefined;
  shared.listening = new Map();
  client.end().catch(() => undefined);
  const gone = [...shared.uses];
  shared.uses.clear();
  if (connections.get(shared.url) === shared) connections.delete(shared.url);
  for (const use of gone) use.failed(error);
}

function connect(shared: Shared): Promise<pg.Client> {
  if (shared.client) return Promise.resolve(shared.client);
  shared.connecting ??= (async () => {
    const client = new pg.Client({
      connectionString: shared.url,
      keepAlive: true,
      connectionTimeoutMillis: shared.connectTimeoutMs,
      application_name: LISTENER_APPLICATION_NAME,
    });
    // Both stay attached until the end: an 'error' without a listener would end the process.
    client.on('error', (error) => lost(shared, client, error));
    client.on('end', () => lost(shared, client, new Error('the PostgreSQL listening connection closed')));
    client.on('notification', (message) => {
      for (const use of shared.uses) if (use.channel === message.channel) use.notify?.(message.payload);
    });
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    if (shared.uses.size === 0) {
      // Every use closed while it connected.
      await client.end().catch(() => undefined);
      throw new Error('the PostgreSQL listening connection is no longer used');
    }
    shared.client = client;
    shared.listening = new Map();
    return client;
  })().finally(() => {
    shared.connecting = undefined;
  });
  return shared.connecting;
}

/** Removes `use`; the connection ends with its last use. */
async function release(shared: Shared, use: Use): Promise<void> {
  if (!shared.uses.delete(use) || shared.uses.size > 0) return;
  if (connections.get(shared.url) === shared) connections.delete(shared.url);
  const client = shared.client;
  shared.client = undefined;
  await client?.end().catch(() => undefined);
}

function failUse(shared: Shared, use: Use, error: unknown): void {
  if (!shared.uses.has(use)) return;
  void release(shared, use);
  use.failed(error);
}

/** LISTENs on `channel` (a fixed identifier) on the process's shared connection to `url`. */
export function listen(
  url: string,
  channel: string,
  handlers: ListenHandlers,
  options: ListenerOptions = {},
): { close(): Promise<void> } {
  const shared = sharedFor(url, options);
  const use: Use = {
    channel,
    failed: (error) => handlers.failed(error),
    notify: (payload) => handlers.notify(payload),
  };
  shared.uses.add(use);
  connect(shared)
    .then((client) => {
      let listened = shared.listening.get(channel);
      if (!listened) {
        listened = client.query(`LISTEN ${channel}`);
        shared.listening.set(channel, listened);
      }
      return listened;
    })
    .then(
      () => {
        if (shared.uses.has(use)) handlers.live();
      },
      (error: unknown) => failUse(shared, use, error),
    );
  return { close: () => release(shared, use) };
}

/**
 * The shared connection itself, for state that lives as long as the session (advisory locks): `lost`
 * is called once when it goes, and the session's state with it.
 */
export function listenerSession(
  url: string,
  lostSession: (error: unknown) => void,
  options: ListenerOptions = {},
): { client: Promise<pg.Client>; close(): Promise<void> } {
  const shared = sharedFor(url, options);
  const use: Use = { channel: null, failed: lostSession };
  shared.uses.add(use);
  const client = connect(shared);
  // A session that never connected is no use: its owner hears the rejection and opens another.
  client.catch(() => release(shared, use));
  return { client, close: () => release(shared, use) };
}
