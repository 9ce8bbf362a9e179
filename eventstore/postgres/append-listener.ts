/**
 * The server side of the PostgreSQL log's append subscription (eventstore/append-subscription.ts):
 * the append channel, LISTENed on the process's one listening connection (config/postgres-listener.ts,
 * shared with the read models' feeds). Every append NOTIFYs its top position inside its transaction,
 * which PostgreSQL delivers at commit, so a notification never announces an event a reader cannot see
 * yet. The subscription reopens after a lost connection with backoff and wakes every waiter once it
 * listens again; meanwhile waiters read the head every second (postgres-event-log.ts).
 */
import { listen } from '../../config/postgres-listener.ts';
import type { SubscriptionSource } from '../append-subscription.ts';
import { APPEND_CHANNEL } from './schema.ts';

export { LISTENER_APPLICATION_NAME } from '../../config/postgres-listener.ts';

export function appendListenerSource(connectionString: string, connectTimeoutMs: number): SubscriptionSource {
  return {
    open(handlers) {
      return listen(
        connectionString,
        APPEND_CHANNEL,
        {
          live: () => handlers.confirmed(),
          notify(payload) {
            const position = Number(payload);
            if (Number.isSafeInteger(position) && position > 0) handlers.appended(position);
          },
          failed: (error) => handlers.failed(error),
        },
        { connectTimeoutMs },
      );
    },
  };
}
