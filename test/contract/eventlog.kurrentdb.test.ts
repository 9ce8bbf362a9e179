import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { EventLog } from '../../eventstore/port.ts';
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

void describe('EventLog kurrentdb: input checks (no server needed)', () => {
  void it('kurrentdb: refuses ids that are not UUIDs and data that is not a JSON object, array or string', async () => {
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
