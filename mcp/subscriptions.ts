import type { ServerNotifier } from '@modelcontextprotocol/server';
import { KEY_RECHECK_MS } from '../service/access.ts';
import { errors, type Result } from '../service/errors.ts';
import { MAX_OPEN_STREAMS_PER_KEY } from '../service/changes.ts';
import type { Services } from '../service/services.ts';
import { projectUri } from './resources.ts';

/** Rows read per store read while catching up with the writes. */
const READ_BATCH = 500;

/** An open listen: `signal` aborts when the key is revoked or the instance shuts down (the SDK then closes the stream); `close` gives the key's slot back (idempotent). */
export type Listen = { signal: AbortSignal; close(): void };

type Entry = { authorization: string | undefined; abort: AbortController };

/**
 * subscriptions/listen fed by the commit signal the long-poll and the SSE stream wait on: while a
 * listen is open, one pump per instance reads the project rows written since it started (the delta,
 * so it sees commits of projectors in another process as the long-poll does) and publishes
 * `resources/updated` for each project's URI and `resources/list_changed` for the board. Between
 * writes it re-checks the keys of the open listens, ending those whose key no longer authenticates.
 */
export function createListenSlots(services: Services, notify: ServerNotifier, recheckMs = KEY_RECHECK_MS) {
  const open = new Set<Entry>();
  const perKey = new Map<string, number>();
  let pump: AbortController | null = null;

  function startPump(): void {
    if (pump !== null) return;
    const stop = new AbortController();
    pump = stop;
    void run(stop.signal).finally(() => {
      if (pump === stop) pump = null;
      // A listen opened while this pump was ending needs one of its own.
      if (open.size > 0 && !services.commits.closed.aborted) startPump();
    });
  }

  async function run(signal: AbortSignal): Promise<void> {
    const started = await services.projects.changes({ since: 'now' });
    if (!started.ok) return;
    const [feed, ended] = [started.value, AbortSignal.any([signal, services.commits.closed])];
    while (!ended.aborted) {
      // A store that does not answer now is read again after the next wait.
      const batch = await feed.next(READ_BATCH).catch(() => null);
      if (batch && batch.rows.length > 0) {
        // Before each delivery: a listen whose key was revoked since the last check is closed, not told.
        await recheckKeys('before-delivery');
        for (const row of batch.rows) notify.resourceUpdated(projectUri((JSON.parse(row.json) as { id: string }).id));
        notify.resourcesChanged();
        if (batch.hasMore) continue;
      }
      await recheckKeys('idle');
      if (open.size === 0) return;
      // After a failed read, the next is tried once the interval has passed.
      await services.commits.waitPast(batch?.upToSeq ?? Number.MAX_SAFE_INTEGER, {
        timeoutMs: recheckMs,
        signal: ended,
      });
    }
  }

  async function recheckKeys(when: 'before-delivery' | 'idle'): Promise<void> {
    for (const entry of open) {
      const caller = await (async () => services.access.authenticate(entry.authorization))().catch(() => undefined);
      // null: revoked, expired or unknown. undefined: the key store did not answer: kept while idle, but
      // nothing is delivered to a key that could not be checked (the client reconnects once it answers).
      if (caller === null || (caller === undefined && when === 'before-delivery')) entry.abort.abort();
    }
  }

  /** Takes one of the key's listen slots (2 open per key per instance, as SSE), or says why not. */
  function take(keyId: string, authorization: string | undefined): Result<Listen> {
    if (services.commits.closed.aborted)
      return { ok: false, error: errors.unavailable('The service is shutting down; reconnect shortly.', 1) };
    const count = perKey.get(keyId) ?? 0;
    if (count >= MAX_OPEN_STREAMS_PER_KEY) {
      const message = `At most ${MAX_OPEN_STREAMS_PER_KEY} subscriptions/listen streams may be open per API key; close one (or listen again once it has ended) and retry.`;
      return { ok: false, error: errors.rateLimited(5, message) };
    }
    perKey.set(keyId, count + 1);
    const entry: Entry = { authorization, abort: new AbortController() };
    open.add(entry);
    const onShutdown = () => entry.abort.abort();
    services.commits.closed.addEventListener('abort', onShutdown, { once: true });
    startPump();
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      open.delete(entry);
      services.commits.closed.removeEventListener('abort', onShutdown);
      const left = (perKey.get(keyId) ?? 1) - 1;
      if (left > 0) perKey.set(keyId, left);
      else perKey.delete(keyId);
      if (open.size === 0) pump?.abort();
    };
    return { ok: true, value: { signal: entry.abort.signal, close } };
  }

  return {
    open: take,
    close() {
      for (const entry of open) entry.abort.abort();
      pump?.abort();
    },
  };
}
