/**
 * A consumer of `pulseboard/client`, checked by `tsc --noEmit` (never run): every read
 * docs/api-guide.md documents for the client, with the answer types a consumer relies on. A read or
 * option the types lose fails the typecheck here, as does a wrong usage that starts to compile (each
 * `@ts-expect-error` must still find its error).
 */
import {
  createClient,
  type AsOfPoint,
  type BoardPage,
  type BoardPageAsOf,
  type BoardQuery,
  type CallDetail,
  type CallPage,
  type ProjectDiff,
  type ProjectHistory,
  type ProjectRead,
  type ProjectReadAsOf,
  type ProjectSearch,
  type ProjectSearchAsOf,
  type PulseList,
  type PulseOne,
  type Result,
  type SyncPage,
  type SyncPageChanges,
} from 'pulseboard/client';

/** True only when A and B are the same type. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const same = <A, B>(_proof: Equal<A, B>) => {};
type ValueOf<R> = R extends Promise<Result<infer T>> ? T : never;
/** `answers<T>()(call, true)` compiles only when the call answers exactly T. */
const answers =
  <Expected>() =>
  <P>(_call: P, _proof: Equal<ValueOf<P>, Expected>) => {};

export async function consumer(signal: AbortSignal, _anyQuery: BoardQuery): Promise<void> {
  const client = createClient({ baseUrl: 'http://127.0.0.1:8080', key: 'pbk_x' });

  // The board: live, and as of a point (an ISO time or a delta cursor) naming the point it answered for.
  const board = client.projects.board({ page: 2, has_dossier: 'true' }, { signal });
  answers<BoardPage>()(board, true);
  const past = await client.projects.board({ page: 1, asOf: '2026-11-20T09:00:00Z' });
  same<ValueOf<ReturnType<typeof client.projects.board<{ asOf: string }>>>, BoardPageAsOf>(true);
  if (past.ok) {
    const point: AsOfPoint = past.value.asOf;
    const again = await client.projects.board({ page: 2, asOf: point.cursor });
    if (again.ok) void again.value.asOf.cursor;
  }
  same<ValueOf<ReturnType<typeof client.projects.board<typeof _anyQuery>>>, BoardPage | BoardPageAsOf>(true);
  // @ts-expect-error a live page names no point
  void (await client.projects.board()).value?.asOf;
  // @ts-expect-error asOf is a time or a cursor, as text
  void client.projects.board({ asOf: 1_700_000_000 });
  // @ts-expect-error no such board parameter
  void client.projects.board({ page: 1, sort: 'name' });

  // The delta: one page, with include=changes, and as pages.
  const delta = client.projects.delta({ since: 'now', limit: 100 });
  answers<SyncPage>()(delta, true);
  const changes = client.projects.delta({ cursor: 'c', include: 'changes' });
  answers<SyncPageChanges>()(changes, true);
  // @ts-expect-error exactly one of since and cursor
  void client.projects.delta({ since: 'now', cursor: 'c' });
  for await (const step of client.projects.changes({ cursor: 'c', wait: 30, signal })) {
    if (!step.ok) break;
    void step.page.cursor;
  }

  // The diff between two points: one page, and its pages.
  const diff = client.projects.diff({ from: '2026-11-01T00:00:00Z', to: '2026-11-20T00:00:00Z', limit: 50 });
  answers<ProjectDiff>()(diff, true);
  for await (const step of client.projects.diffPages({ from: '2026-11-01T00:00:00Z' })) {
    if (step.ok) void step.page.next;
  }

  // One project: live, with context, as of a point; its history and asks.
  const one = client.projects.get('tidalswap', { include: 'context' });
  answers<ProjectRead>()(one, true);
  const then = await client.projects.get('tidalswap', { asOf: '2026-11-20T09:00:00Z' });
  same<ValueOf<ReturnType<typeof client.projects.get<{ asOf: string }>>>, ProjectReadAsOf>(true);
  if (then.ok) void then.value.asOf.at;
  same<ValueOf<ReturnType<typeof client.projects.history>>, ProjectHistory>(true);
  void client.projects.asks('tidalswap');

  // Search: live and as of a point.
  const found = client.search('0x1111111111111111111111111111111111111111');
  answers<ProjectSearch>()(found, true);
  const foundThen = await client.search('tidalswap.example', { asOf: 'cursor' }, { signal });
  same<ValueOf<ReturnType<typeof client.search<{ asOf: string }>>>, ProjectSearchAsOf>(true);
  if (foundThen.ok) void foundThen.value.asOf.cursor;
  // @ts-expect-error search takes q as its first argument, not in the options
  void client.search('x', { q: 'y' });

  // Call records and pulse.
  const calls = client.calls.list({ contract: '0x1111111111111111111111111111111111111111', chain: 'base' });
  answers<CallPage>()(calls, true);
  same<ValueOf<ReturnType<typeof client.calls.get>>, CallDetail>(true);
  same<ValueOf<ReturnType<typeof client.pulse.list>>, PulseList>(true);
  same<ValueOf<ReturnType<typeof client.pulse.get>>, PulseOne>(true);
}
