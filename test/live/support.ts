import { sourceEventId } from '../../events/ids.ts';
import type { EventLog } from '../../eventstore/port.ts';
import { day } from '../support/events.ts';

/** One server-sent event as a client sees it (`event`: its name, null for the default `message`). */
export type SseEvent = { id: string | null; event: string | null; data: string | null; comment: boolean };

/**
 * A change-stream client over real HTTP: collects parsed events as they arrive. `ended` resolves
 * when the server ends the stream (or the client aborts).
 */
export type SseClient = {
  status: number;
  headers: Headers;
  events: SseEvent[];
  /** The raw text received so far. */
  text(): string;
  /** Resolves once `count` unnamed events with data (rows) have arrived, or rejects after `timeoutMs` (a bound, not a timing). */
  rows(count: number, timeoutMs?: number): Promise<SseEvent[]>;
  ended: Promise<void>;
  abort(): void;
};

export async function openStream(url: string, key: string, headers: Record<string, string> = {}): Promise<SseClient> {
  const controller = new AbortController();
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  const events: SseEvent[] = [];
  let raw = '';
  let buffer = '';
  let waiters: (() => void)[] = [];
  const dataRows = () => events.filter((e) => e.data !== null && e.event === null);
  const ended = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body) {
        const text = decoder.decode(chunk as Uint8Array, { stream: true });
        raw += text;
        buffer += text;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let id: string | null = null;
          let event: string | null = null;
          let data: string | null = null;
          let comment = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comment = true;
            else if (line.startsWith('id: ')) id = line.slice(4);
            else if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data = data === null ? line.slice(6) : `${data}\n${line.slice(6)}`;
          }
          events.push({ id, event, data, comment });
        }
        for (const wake of waiters) wake();
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    } finally {
      for (const wake of waiters) wake();
      waiters = [];
    }
  })();
  let finished = false;
  void ended.then(
    () => (finished = true),
    () => (finished = true),
  );
  return {
    status: res.status,
    headers: res.headers,
    events,
    text: () => raw,
    async rows(count, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (dataRows().length < count) {
        if (finished) throw new Error(`stream ended after ${dataRows().length} of ${count} rows`);
        if (Date.now() > deadline) throw new Error(`only ${dataRows().length} of ${count} rows within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 200);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return dataRows();
    },
    ended,
    abort: () => controller.abort(),
  };
}

/** Appends one `project.sighted` per project, `count` distinct projects from `first`: each writes exactly one new row. */
export async function appendSightings(
  log: EventLog,
  options: { first: number; count: number; prefix: string; dossier?: boolean },
): Promise<void> {
  for (let n = options.first; n < options.first + options.count; n++) {
    const projectId = `${options.prefix}-${n}`;
    const data = { projectId, at: day(0, n % 24), fol: n };
    const type = 'project.sighted';
    const result = await log.append(`project-${projectId}`, [
      { id: sourceEventId(type, projectId), type, data, metadata: {} },
    ]);
    if (!result.ok) throw new Error(`append of ${projectId} failed`);
  }
}

/** The (seq, id) position a delta cursor carries. */
export function cursorPosition(cursor: string): { s: number; i: string } {
  const decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { s: number; i: string };
  return { s: decoded.s, i: decoded.i };
}
