import { v5 as uuidv5 } from 'uuid';
import type { EventLog, ExpectedRevision, RecordedEvent } from '../../eventstore/port.ts';
import { dataOf } from '../../events/catalogue.ts';
import { EVENT_ID_NAMESPACE, commandEventId } from '../../events/ids.ts';
import { streams } from '../../events/streams.ts';
import { thesisEvent } from '../../events/thesis.ts';
import { THESIS_APPEND_ATTEMPTS } from './limits.ts';

/**
 * Daily quota streams (`thesis-quota-<scope>-<utcDay>`): a slot is a `thesis.quota.taken`
 * appended with `expected = the revision the count was read at`. Two writers that both read
 * "one slot left" cannot both append: the second gets `wrong_expected_revision`, re-reads, and
 * finds the quota full. A release (a refused request handing its slot back) may append anywhere,
 * since lowering the count can never break the cap.
 */

export type SlotResult = { ok: true } | { ok: false; reason: 'full' | 'contention' };

export type DailyQuota = { scope: string; day: string; cap: number };

export const globalScope = 'global';
export const memberScope = (owner: string): string => `member-${owner}`;

export function countTaken(events: readonly RecordedEvent[]): number {
  const taken = new Set<string>();
  for (const event of events) {
    if (event.type === 'thesis.quota.taken') taken.add(dataOf('thesis.quota.taken', event.data).requestId);
    else if (event.type === 'thesis.quota.released')
      taken.delete(dataOf('thesis.quota.released', event.data).requestId);
  }
  return taken.size;
}

export async function takeDailySlot(
  log: EventLog,
  quota: DailyQuota,
  job: { requestId: string; contract: string; at: string },
): Promise<SlotResult> {
  const stream = streams.thesisQuota(quota.scope, quota.day);
  for (let attempt = 0; attempt < THESIS_APPEND_ATTEMPTS; attempt++) {
    const events = await log.readStream(stream);
    if (countTaken(events) >= quota.cap) return { ok: false, reason: 'full' };
    const last = events[events.length - 1];
    const expected: ExpectedRevision = last ? last.revision : 'no_stream';
    const event = thesisEvent('thesis.quota.taken', { scope: quota.scope, day: quota.day, ...job });
    const result = await log.append(stream, [{ id: commandEventId(), ...event }], expected);
    if (result.ok) return { ok: true };
  }
  return { ok: false, reason: 'contention' };
}

export async function releaseDailySlot(log: EventLog, quota: DailyQuota, requestId: string, at: string): Promise<void> {
  const stream = streams.thesisQuota(quota.scope, quota.day);
  // One release per request whatever retries happen: the id is derived from the request.
  const id = uuidv5(`thesis.quota.released\u0000${stream}\u0000${requestId}`, EVENT_ID_NAMESPACE);
  await log.append(stream, [
    { id, ...thesisEvent('thesis.quota.released', { scope: quota.scope, day: quota.day, requestId, at }) },
  ]);
}

export async function dailyCount(log: EventLog, quota: Omit<DailyQuota, 'cap'>): Promise<number> {
  return countTaken(await log.readStream(streams.thesisQuota(quota.scope, quota.day)));
}
