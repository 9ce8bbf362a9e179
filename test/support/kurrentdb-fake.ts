/**
 * An in-memory stand-in for the part of @kurrent/kurrentdb-client's KurrentDBClient the event-log
 * adapter uses (eventstore/kurrentdb/kurrentdb-event-log.ts), with the server's semantics as far as the
 * adapter relies on them: $all positions with commit = prepare growing with every record (system
 * records such as id markers included), a stream's revisions from 0, expected-state checks on append
 * (WrongExpectedVersionError), StreamNotFoundError on reading a missing stream, forward reads
 * inclusive of their start and backward reads exclusive of it, event-type filters, a live $all
 * subscription, stream metadata. Every call is counted and yields once, so concurrent calls
 * interleave. It does not model the server's own best-effort id checks: the adapter must not need them.
 *
 * Several clients (connections) can share one server. Returned events count how often the adapter
 * reads their `metadata` (the real client has parsed it already; the count shows the adapter's laziness).
 */
import { EventEmitter } from 'node:events';
import {
  BACKWARDS,
  END,
  START,
  StreamNotFoundError,
  UnsupportedError,
  WrongExpectedVersionError,
  type KurrentDBClient,
} from '@kurrent/kurrentdb-client';

type StoredRecord = {
  streamId: string;
  revision: bigint;
  id: string;
  type: string;
  data: string;
  metadata: string | undefined;
  created: Date;
  position: bigint;
};

type Filter = { filterOn?: string; regex?: string; prefixes?: string[] };
type Position = { commit: bigint; prepare: bigint };
type EventInput = { id: string; type: string; data: unknown; metadata?: unknown };

export type FakeKurrentDbServer = {
  /** A new connection to this server. */
  client(): KurrentDBClient;
  /** Calls per client method, over every connection since the last reset. */
  calls: Map<string, number>;
  records: StoredRecord[];
  resetCounts(): void;
  /**
   * A lagging follower: a read that does not require the leader (requiresLeader unset or false, the
   * client's default) is served by a node missing this many of the newest records (0: none missing).
   * A function is asked per read (several followers, the connection moving between them).
   */
  followerLag: number | ((method: string) => number);
  /** Reads served per node: how many went to the leader and to a follower. */
  servedBy: { leader: number; follower: number };
  /**
   * While true, every open $all subscription fails (as on a lost connection or a leader change) and
   * every new one fails instead of being confirmed.
   */
  subscriptionsDown: boolean;
  /** Fails every open subscription now. */
  dropSubscriptions(): void;
  /** The server's clock (ms): events are created at it, and `$maxAge` is measured by it. */
  now: () => number;
  /**
   * A scavenge: removes from the log every event older than its stream's `$maxAge`, and every
   * metadata event but the last of its metastream (the server keeps one). Returns how many it removed.
   */
  scavenge(): number;
};

function commandError<T extends Error>(prototype: T, message: string): T {
  const error = Object.create(prototype) as T;
  Object.defineProperty(error, 'message', { value: message });
  return error;
}

function passes(filter: Filter | undefined, record: StoredRecord): boolean {
  if (!filter) return true;
  const subject = filter.filterOn === 'streamName' ? record.streamId : record.type;
  if (filter.regex !== undefined) return new RegExp(filter.regex).test(subject);
  if (filter.prefixes) return filter.prefixes.some((prefix) => subject.startsWith(prefix));
  return true;
}

export type FakeKurrentDbOptions = {
  /**
   * How multiStreamAppend answers: atomically (a 25.1+ server, the default), with the client's
   * UnsupportedError (an older server), or by storing what it is given in a form the v1 reads do not
   * return as written (the data as a JSON string: to prove the adapter checks before relying on it).
   */
  multiStreamAppend?: 'atomic' | 'unsupported' | 'garbled';
};

export function createFakeKurrentDbServer(options: FakeKurrentDbOptions = {}): FakeKurrentDbServer {
  const records: StoredRecord[] = [];
  const streams = new Map<string, StoredRecord[]>();
  const appended = new EventEmitter();
  appended.setMaxListeners(0);
  const calls = new Map<string, number>();
  let position = 1000n;
  const servedBy = { leader: 0, follower: 0 };
  const subscriptions = new Set<EventEmitter>();
  const unavailable = () => Object.assign(new Error('injected: subscription lost'), { code: 14 });
  let server!: FakeKurrentDbServer;

  /** The `$maxAge` (seconds) in a stream's metadata, if any. */
  const maxAgeOf = (stream: string): number | undefined => {
    const last = streams.get(`$$${stream}`)?.at(-1);
    const value = last ? (JSON.parse(last.data) as { $maxAge?: unknown }).$maxAge : undefined;
    return typeof value === 'number' ? value : undefined;
  };
  const expired = (record: StoredRecord, maxAgeSeconds: number) =>
    server.now() - record.created.getTime() > maxAgeSeconds * 1000;

  /** The newest position the node serving this read has: the leader has every record, a follower may lag. */
  const horizon = (method: string, requiresLeader: boolean | undefined): bigint => {
    if (requiresLeader === true) {
      servedBy.leader += 1;
      return position;
    }
    servedBy.follower += 1;
    const lag = typeof server.followerLag === 'function' ? server.followerLag(method) : server.followerLag;
    const seen = records.length - Math.max(0, lag);
    return seen <= 0 ? 0n : records[seen - 1]!.position;
  };

  const step = async (method: string) => {
    calls.set(method, (calls.get(method) ?? 0) + 1);
    await new Promise((resolve) => setImmediate(resolve));
  };

  /** An event as the client returns it. */
  const recorded = (record: StoredRecord) => {
    return {
      streamId: record.streamId,
      id: record.id,
      revision: record.revision,
      type: record.type,
      data: JSON.parse(record.data) as unknown,
      isJson: true,
      // As the real client: metadata bytes decoded as JSON for every event it returns.
      metadata: record.metadata === undefined ? undefined : (JSON.parse(record.metadata) as unknown),
      created: record.created,
      position: { commit: record.position, prepare: record.position } as Position,
    };
  };

  function append(stream: string, events: readonly EventInput[], state: unknown) {
    const list = streams.get(stream) ?? [];
    const current = list.length === 0 ? null : BigInt(list.length - 1);
    const ok =
      state === undefined || state === 'any'
        ? true
        : state === 'no_stream'
          ? current === null
          : state === 'stream_exists'
            ? current !== null
            : current === state;
    if (!ok)
      throw commandError(
        WrongExpectedVersionError.prototype,
        `${stream}: wrong expected version (expected ${String(state)}, at ${String(current)})`,
      );
    const written: StoredRecord[] = [];
    for (const event of events) {
      position += 10n + BigInt(records.length % 7);
      const record: StoredRecord = {
        streamId: stream,
        revision: BigInt(list.length),
        id: event.id,
        type: event.type,
        data: JSON.stringify(event.data),
        metadata: event.metadata === undefined ? undefined : JSON.stringify(event.metadata),
        created: new Date(server.now()),
        position,
      };
      list.push(record);
      records.push(record);
      written.push(record);
    }
    streams.set(stream, list);
    for (const record of written) appended.emit('record', record);
    return {
      success: true,
      nextExpectedRevision: BigInt(list.length - 1),
      position: { commit: position, prepare: position },
    };
  }

  function client(): KurrentDBClient {
    const fake = {
      async appendToStream(stream: string, events: EventInput | EventInput[], options: { streamState?: unknown } = {}) {
        await step('appendToStream');
        return append(stream, Array.isArray(events) ? events : [events], options.streamState);
      },

      async multiStreamAppend(requests: { streamName: string; expectedState: unknown; events: EventInput[] }[]) {
        await step('multiStreamAppend');
        const mode = options.multiStreamAppend ?? 'atomic';
        if (mode === 'unsupported') throw new UnsupportedError('multiStreamAppend', '25.1');
        // All or nothing: every expectation is checked before anything is written.
        for (const request of requests) {
          const list = streams.get(request.streamName) ?? [];
          const current = list.length === 0 ? null : BigInt(list.length - 1);
          const state = request.expectedState;
          const ok =
            state === 'any' ||
            (state === 'no_stream'
              ? current === null
              : state === 'stream_exists'
                ? current !== null
                : current === state);
          if (!ok)
            throw commandError(WrongExpectedVersionError.prototype, `${request.streamName}: wrong expected version`);
        }
        const responses = requests.map((request) => {
          const events =
            mode === 'garbled'
              ? request.events.map((event) => ({ ...event, data: JSON.stringify(event.data) }))
              : request.events;
          const result = append(request.streamName, events, 'any');
          return { streamName: request.streamName, revision: result.nextExpectedRevision };
        });
        return { position, responses };
      },

      readStream(
        stream: string,
        options: {
          fromRevision?: bigint | string;
          maxCount?: number | bigint;
          direction?: string;
          requiresLeader?: boolean;
        } = {},
      ) {
        return (async function* () {
          await step('readStream');
          const upTo = horizon('readStream', options.requiresLeader);
          // Events past the stream's $maxAge are no longer read, even before a scavenge removes them.
          const maxAge = maxAgeOf(stream);
          const list = streams
            .get(stream)
            ?.filter((record) => record.position <= upTo && (maxAge === undefined || !expired(record, maxAge)));
          if (!list || list.length === 0) throw commandError(StreamNotFoundError.prototype, `${stream} not found`);
          const max = Number(options.maxCount ?? Number.MAX_SAFE_INTEGER);
          let chosen: StoredRecord[];
          if (options.direction === BACKWARDS) {
            const from =
              options.fromRevision === undefined || options.fromRevision === END
                ? list.length - 1
                : Number(options.fromRevision);
            chosen = list.slice(0, from + 1).reverse();
          } else {
            const from =
              options.fromRevision === undefined || options.fromRevision === START ? 0 : Number(options.fromRevision);
            chosen = list.slice(from);
          }
          for (const record of chosen.slice(0, max)) yield { event: recorded(record) };
        })();
      },

      readAll(
        options: {
          fromPosition?: Position | string;
          maxCount?: number | bigint;
          direction?: string;
          filter?: Filter;
          requiresLeader?: boolean;
        } = {},
      ) {
        return (async function* () {
          const method = options.direction === BACKWARDS ? 'readAll backwards' : 'readAll';
          await step(method);
          const upTo = horizon(method, options.requiresLeader);
          const held = records.filter((r) => r.position <= upTo);
          const max = Number(options.maxCount ?? Number.MAX_SAFE_INTEGER);
          const from = options.fromPosition;
          let chosen: StoredRecord[];
          if (options.direction === BACKWARDS) {
            chosen = (
              from === undefined || from === END ? held : held.filter((r) => r.position < (from as Position).commit)
            )
              .slice()
              .reverse();
          } else {
            chosen =
              from === undefined || from === START ? held : held.filter((r) => r.position >= (from as Position).commit);
          }
          let sent = 0;
          for (const record of chosen) {
            if (sent >= max) return;
            if (!passes(options.filter, record)) continue;
            sent += 1;
            yield { event: recorded(record) };
          }
        })();
      },

      subscribeToAll(options: { filter?: Filter } = {}) {
        calls.set('subscribeToAll', (calls.get('subscribeToAll') ?? 0) + 1);
        const subscription = new EventEmitter() as EventEmitter & { unsubscribe(): Promise<void> };
        const listener = (record: StoredRecord) => {
          if (passes(options.filter, record)) subscription.emit('data', { event: recorded(record) });
        };
        appended.on('record', listener);
        subscriptions.add(subscription);
        subscription.unsubscribe = async () => {
          appended.off('record', listener);
          subscriptions.delete(subscription);
        };
        setImmediate(() => {
          if (server.subscriptionsDown) subscription.emit('error', unavailable());
          else subscription.emit('confirmation');
        });
        return subscription;
      },

      async getStreamMetadata(stream: string) {
        await step('getStreamMetadata');
        const list = streams.get(`$$${stream}`);
        const last = list?.at(-1);
        if (!last) return { streamName: stream, metadata: undefined };
        // As the real client: the system key `$maxAge` is given as `maxAge`, custom keys as stored.
        const { $maxAge, ...custom } = JSON.parse(last.data) as Record<string, unknown>;
        return { streamName: stream, metadata: { ...custom, ...($maxAge === undefined ? {} : { maxAge: $maxAge }) } };
      },

      async dispose() {
        calls.set('dispose', (calls.get('dispose') ?? 0) + 1);
      },
    };
    return fake as unknown as KurrentDBClient;
  }

  server = {
    client,
    calls,
    records,
    resetCounts() {
      calls.clear();
    },
    followerLag: 0,
    servedBy,
    subscriptionsDown: false,
    now: () => Date.now(),
    scavenge() {
      const removed = new Set<StoredRecord>();
      for (const [stream, list] of streams) {
        const maxAge = maxAgeOf(stream);
        for (const record of list) if (maxAge !== undefined && expired(record, maxAge)) removed.add(record);
        if (stream.startsWith('$$')) for (const record of list.slice(0, -1)) removed.add(record);
      }
      for (let i = records.length - 1; i >= 0; i -= 1) if (removed.has(records[i]!)) records.splice(i, 1);
      return removed.size;
    },
    dropSubscriptions() {
      for (const subscription of [...subscriptions]) subscription.emit('error', unavailable());
    },
  };
  return server;
}
