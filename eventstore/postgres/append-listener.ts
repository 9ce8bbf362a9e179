/**
 * The server side of the PostgreSQL log's append subscription (eventstore/append-subscription.ts):
 * one dedicated connection, outside the pool, that LISTENs on the append channel. Every append
 * NOTIFYs its top position inside its transaction, which PostgreSQL delivers at commit, so a
 * notification never announces an event a reader cannot see yet. The subscription reopens a lost
 * connection with backoff and wakes every waiter once it listens again; meanwhile waiters read the
 * head every second (postgres-event-log.ts).
 */
import pg from 'pg';
import type { SubscriptionSource } from '../append-subscription.ts';
import { APPEND_CHANNEL } from './schema.ts';

export const LISTENER_APPLICATION_NAME = 'pulseboard-event-log-listener';

export function appendListenerSource(connectionString: string, connectTimeoutMs: number): SubscriptionSource {
  return {
    open(handlers) {
      const client = new pg.Client({
        connectionString,
        keepAlive: true,
        connectionTimeoutMillis: connectTimeoutMs,
        application_name: LISTENER_APPLICATION_NAME,
      });
      let over = false;
      const fail = (error: unknown) => {
        if (over) return;
        over = true;
        handlers.failed(error);
        void client.end().catch(() => undefined);
      };
      // Kept for the client's whole life: a later 'error' without a listener would crash the process.
      client.on('error', fail);
      client.on('end', () => fail(new Error('the PostgreSQL listening connection ended')));
      client.on('notification', (message) => {
        if (over || message.channel !== APPEND_CHANNEL) return;
        const position = Number(message.payload);
        if (Number.isSafeInteger(position) && position > 0) handlers.appended(position);
      });
      client
        .connect()
        .then(() => client.query(`LISTEN ${APPEND_CHANNEL}`))
        .then(() => {
          if (!over) handlers.confirmed();
        }, fail);
      return {
        async close() {
          over = true;
          await client.end().catch(() => undefined);
        },
      };
    },
  };
}
