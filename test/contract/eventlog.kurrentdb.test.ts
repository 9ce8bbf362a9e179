import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'vitest';
import { EventEmitter, once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { EventLogUnavailableError, type EventLog } from '../../eventstore/port.ts';
import { sleepUntilAppend } from '../../eventstore/append-signals.ts';
import {
  WAKE_ALL,
  createAppendSubscription,
  reconnectDelay,
  type AppendSubscriptionState,
  type SubscriptionHandlers,
} from '../../eventstore/append-subscription.ts';
import { createKurrentDbEventLog } from '../../eventstore/kurrentdb/kurrentdb-event-log.ts';
import { skipUnlessDocker, startKurrentDb } from '../support/containers.ts';
import { eventLogContract } from './eventlog.contract.ts';

const skip = await skipUnlessDocker('KurrentDB');

// Each open() is a fresh single-node server, so "a fresh log" really is empty.
eventLogContract(
  'kurrentdb',
  async () => {
    const server = await startKurrentDb();
    const log = createKurrentDbEventLog(server.connectionString);
    const connections: EventLog[] = [];
    return {
      log,
      async connect() {
        const connection = createKurrentDbEventLog(server.connectionString);
        connections.push(connection);
        return connection;
      },
      async dispose() {
        for (const connection of connections) await connection.close().catch(() => undefined);
        await log.close();
        await server.stop();
      },
    };
  },
  { skip },
);

describe('EventLog kurrentdb: input checks (no server needed)', () => {
  it('kurrentdb: refuses ids that are not UUIDs and data that is not a JSON object, array or string', async () => {
    // Nothing listens on port 1: a refusal that reached the network would fail differently.
    const log = createKurrentDbEventLog('kurrentdb://127.0.0.1:1?tls=false');
    try {
      await assert.rejects(log.append('s', [{ id: 'not-a-uuid', type: 't', data: {} }]), {
        name: 'TypeError',
        message: 'event id "not-a-uuid" is not a UUID (KurrentDB requires one)',
      });
      for (const data of [null, 42, true]) {
        await assert.rejects(log.append('s', [{ id: randomUUID(), type: 't', data }]), (error: unknown) => {
          assert.ok(error instanceof TypeError);
          assert.match(error.message, /KurrentDB stores a JSON object, array or string as event data/);
          return true;
        });
      }
    } finally {
      await log.close();
    }
  });
});

describe('EventLog kurrentdb: an unreachable server (no server needed)', () => {
  it(
    "kurrentdb: every call fails with the port's EventLogUnavailableError naming the server, never a raw gRPC error",
    { timeout: 120_000 },
    async () => {
      const states: AppendSubscriptionState[] = [];
      const log = createKurrentDbEventLog('kurrentdb://admin:secret@127.0.0.1:1?tls=false', {
        onSubscriptionState: (state) => states.push(state),
      });
      const calls: [string, () => Promise<unknown>][] = [
        ['archiveId', () => log.archiveId()],
        ['append', () => log.append('s', [{ id: randomUUID(), type: 't', data: {} }])],
        ['readStream', () => log.readStream('s')],
        ['streamRevision', () => log.streamRevision('s')],
        ['readAll', () => log.readAll({ afterPosition: 0, limit: 10 })],
        ['headPosition', () => log.headPosition()],
        ['positionBefore', () => log.positionBefore('2026-11-20T00:00:00Z')],
        ['waitForAppend', () => log.waitForAppend(0, 3_600_000)],
      ];
      try {
        for (const [name, call] of calls) {
          await assert.rejects(call(), (error: unknown) => {
            assert.ok(error instanceof EventLogUnavailableError, `${name}: ${String(error)}`);
            assert.equal(
              error.message,
              'KurrentDB at kurrentdb://127.0.0.1:1?tls=false does not answer (unavailable)',
              name,
            );
            return true;
          });
        }
        assert.deepEqual(
          states,
          ['connecting', 'reconnecting'],
          'the waiter opened the subscription, which the server refused',
        );
      } finally {
        await log.close();
      }
    },
  );
});

/** A subscription source the test drives by hand, and a timer that only records what was scheduled. */
function fakeServer() {
  const opened: SubscriptionHandlers[] = [];
  const closed: number[] = [];
  const scheduled: { run: () => void; delayMs: number; cancelled: boolean }[] = [];
  return {
    opened,
    closed,
    scheduled,
    source: {
      open(handlers: SubscriptionHandlers) {
        const index = opened.push(handlers) - 1;
        return {
          async close() {
            closed.push(index);
          },
        };
      },
    },
    schedule(run: () => void, delayMs: number) {
      const entry = { run, delayMs, cancelled: false };
      scheduled.push(entry);
      return () => {
        entry.cancelled = true;
      };
    },
  };
}

describe('EventLog kurrentdb: one subscription fanned out to waiters (no server needed)', () => {
  it('opens one subscription for any number of waiters, only when someone waits, and wakes each waiter past its position', async () => {
    const server = fakeServer();
    const signals = new EventEmitter();
    const subscription = createAppendSubscription(server.source, { signals, schedule: server.schedule });
    assert.equal(server.opened.length, 0, 'nothing is opened before a waiter');
    const readies = [subscription.ready(), subscription.ready(), subscription.ready()];
    assert.equal(server.opened.length, 1);
    assert.equal(subscription.state(), 'connecting');
    server.opened[0]!.confirmed();
    await Promise.all(readies);
    assert.equal(subscription.state(), 'live');
    const woken: number[] = [];
    const waits = [10, 20, 30].map((after) =>
      sleepUntilAppend(signals, after, 3_600_000).then(() => woken.push(after)),
    );
    server.opened[0]!.appended(25);
    await Promise.all(waits.slice(0, 2));
    assert.deepEqual(woken.sort(), [10, 20]);
    server.opened[0]!.appended(31);
    await waits[2];
    assert.deepEqual(woken.sort(), [10, 20, 30]);
    await subscription.ready();
    assert.equal(server.opened.length, 1, 'still the one subscription');
    await subscription.close();
    assert.deepEqual(server.closed, [0]);
  });

  it('reopens after a failure with capped exponential backoff and jitter, wakes every waiter once back, and reports each state', async () => {
    const server = fakeServer();
    const signals = new EventEmitter();
    const states: AppendSubscriptionState[] = [];
    const subscription = createAppendSubscription(server.source, {
      signals,
      schedule: server.schedule,
      baseDelayMs: 100,
      maxDelayMs: 1_000,
      random: () => 0.5,
      onState: (state) => states.push(state),
    });
    const first = subscription.ready();
    server.opened[0]!.confirmed();
    await first;
    let woken = false;
    const waiting = sleepUntilAppend(signals, 1_000_000, 3_600_000).then(() => {
      woken = true;
    });
    // Six failures in a row: 100, 200, 400, 800 then capped at 1000, each with half of it random.
    for (let attempt = 0; attempt < 6; attempt += 1) {
      server.opened.at(-1)!.failed(new Error('UNAVAILABLE'));
      assert.equal(subscription.state(), 'reconnecting');
      await subscription.ready(); // does not wait for the server while reconnecting
      const entry = server.scheduled.at(-1)!;
      assert.equal(
        entry.delayMs,
        reconnectDelay(attempt, 100, 1_000, () => 0.5),
      );
      entry.run();
    }
    assert.deepEqual(
      server.scheduled.map((s) => s.delayMs),
      [75, 150, 300, 600, 750, 750],
    );
    assert.equal(server.opened.length, 7);
    assert.equal(woken, false, 'no waiter is woken while the subscription is down');
    server.opened.at(-1)!.confirmed();
    await waiting;
    assert.equal(
      woken,
      true,
      'back live: appends made while it was down were not delivered, so every waiter looks again',
    );
    assert.deepEqual(states, ['connecting', 'live', 'reconnecting', 'live']);
    // A failure after a success starts the backoff from the base again.
    server.opened.at(-1)!.failed(new Error('UNAVAILABLE'));
    assert.equal(server.scheduled.at(-1)!.delayMs, 75);
    await subscription.close();
    assert.equal(server.scheduled.at(-1)!.cancelled, true, 'close cancels the pending reopen');
    assert.equal(subscription.state(), 'closed');
    // Late callbacks from a dead subscription change nothing.
    server.opened.at(-1)!.confirmed();
    assert.equal(subscription.state(), 'closed');
  });

  it('bounds the backoff for any number of failures and never waits less than half of it', () => {
    for (let attempt = 0; attempt < 200; attempt += 1) {
      const ceiling = Math.min(10_000, 100 * 2 ** attempt);
      for (const r of [0, 0.25, 0.999]) {
        const delay = reconnectDelay(attempt, 100, 10_000, () => r);
        assert.ok(delay >= ceiling / 2 && delay <= ceiling, `attempt ${attempt}, random ${r}: ${delay}`);
      }
    }
    assert.equal(WAKE_ALL > 2 ** 52, true);
  });

  it('a source that throws on open counts as a failure and is retried', async () => {
    const signals = new EventEmitter();
    const scheduled: (() => void)[] = [];
    let opens = 0;
    const subscription = createAppendSubscription(
      {
        open(handlers) {
          opens += 1;
          if (opens === 1) throw new Error('no channel');
          queueMicrotask(() => handlers.confirmed());
          return { close: async () => undefined };
        },
      },
      { signals, schedule: (run) => (scheduled.push(run), () => undefined) },
    );
    await subscription.ready();
    assert.equal(subscription.state(), 'reconnecting');
    scheduled[0]!();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(subscription.state(), 'live');
    await subscription.close();
  });
});

describe('EventLog kurrentdb: a server that never answers (no server needed)', () => {
  it(
    'kurrentdb: waitForAppend still ends at its timeout, and on abort, while the subscription waits for a confirmation',
    { timeout: 60_000 },
    async () => {
      // Accepts connections and says nothing: neither a confirmation nor a refusal ever comes.
      const sockets: Socket[] = [];
      const silent = createServer((socket) => sockets.push(socket));
      silent.listen(0, '127.0.0.1');
      await once(silent, 'listening');
      const { port } = silent.address() as AddressInfo;
      const log = createKurrentDbEventLog(`kurrentdb://127.0.0.1:${port}?tls=false`);
      try {
        await log.waitForAppend(0, 50);
        const controller = new AbortController();
        const waiting = log.waitForAppend(0, 3_600_000, controller.signal);
        controller.abort();
        await waiting;
      } finally {
        for (const socket of sockets) socket.destroy();
        silent.close();
        await log.close();
      }
    },
  );
});
