import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventLog, RecordedEvent } from '../../eventstore/port.ts';
import { createSqliteEventLog } from '../../eventstore/sqlite/sqlite-event-log.ts';
import { sourceEventId } from '../../events/ids.ts';
import type { GenerateOptions } from '../../ingest/generate/context.ts';
import { generateLines } from '../../ingest/generate/generate.ts';
import { createIngestor } from '../../ingest/pipeline.ts';
import type { ReadStore, StoredDoc } from '../../readmodels/port.ts';
import { projectors } from '../../projectors/registry.ts';
import { day } from './events.ts';

/** A small seeded PRNG so every run appends the same events. */
export function prng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One seeded event of project `projectId` at step `step`, drawn from `rand`. */
export type SeededEvent = (rand: () => number, step: number, projectId: string) => { type: string; data: object };

/**
 * Appends `steps` events one by one, each of a project drawn from proj-0 … proj-(projects - 1) and
 * made by `event` from the same seeded PRNG, so every run appends the same log.
 */
export async function appendSeededEvents(
  log: EventLog,
  options: { projects: number; steps: number; seed: number; prefix: string },
  event: SeededEvent,
): Promise<void> {
  const rand = prng(options.seed);
  for (let step = 0; step < options.steps; step++) {
    const projectId = `proj-${Math.floor(rand() * options.projects)}`;
    const { type, data } = event(rand, step, projectId);
    await log.append(`project-${projectId}`, [
      { id: sourceEventId(type, `${options.prefix}-${step}`), type, data, metadata: {} },
    ]);
  }
}

/** Appends a varied stream of project events (sightings, votes, dossiers, checks) one by one. */
export async function appendProjectHistory(
  log: EventLog,
  options: { projects: number; steps: number; seed: number; prefix?: string },
) {
  await appendSeededEvents(log, { ...options, prefix: options.prefix ?? 'm' }, (rand, step, projectId) => {
    const at = day(Math.floor(step / 50), step % 24);
    const pick = rand();
    if (pick < 0.55) {
      const data: Record<string, unknown> = {
        projectId,
        at,
        fol: Math.floor(rand() * 10_000),
        handle: rand() < 0.1 ? `h${Math.floor(rand() * 20)}` : undefined,
      };
      if (data.handle === undefined) delete data.handle;
      return { type: 'project.sighted', data };
    }
    if (pick < 0.75) {
      const data = {
        projectId,
        at,
        voterId: `u${Math.floor(rand() * 40)}`,
        name: 'n',
        avatar: null,
        direction: ['up', 'down', 'none'][Math.floor(rand() * 3)],
      };
      return { type: 'vote.cast', data };
    }
    if (pick < 0.85) {
      const data = {
        projectId,
        at,
        status: 'matched',
        historyComplete: rand() < 0.5,
        posts: 3,
        firstMcap: 10,
        mcap: 20,
      };
      return { type: 'calltracker.checked', data };
    }
    if (pick < 0.95) {
      const data = { projectId, at, state: ['queued', 'ready', 'failed'][Math.floor(rand() * 3)] };
      return { type: 'research.updated', data };
    }
    return { type: 'rival.listed', data: { projectId, at } };
  });
}

/** Every event of a log in log order (optionally only the given type prefixes), read in pages. */
export async function readLog(log: EventLog, typePrefixes?: readonly string[]): Promise<RecordedEvent[]> {
  const events: RecordedEvent[] = [];
  for (let after = 0; ;) {
    const page = await log.readAll({ afterPosition: after, limit: 5000, ...(typePrefixes ? { typePrefixes } : {}) });
    if (page.length === 0) return events;
    events.push(...page);
    after = page[page.length - 1]!.position;
  }
}

/** Every stored document of every read model, as comparable text. */
export async function dumpReadModels(store: ReadStore): Promise<Record<string, StoredDoc[]>> {
  const out: Record<string, StoredDoc[]> = {};
  for (const p of projectors) {
    const rows = (await store.list(p.collection, { offset: 0, limit: 1_000_000 })).docs;
    out[p.collection] = rows.sort((a, b) => (a.id < b.id ? -1 : 1));
  }
  return out;
}

/** Compares two dumps and names the first differing document instead of printing both whole. */
export function firstDifference(a: Record<string, StoredDoc[]>, b: Record<string, StoredDoc[]>): string | null {
  for (const collection of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const x = a[collection] ?? [];
    const y = b[collection] ?? [];
    if (x.length !== y.length) return `${collection}: ${x.length} vs ${y.length} documents`;
    for (let i = 0; i < x.length; i++) {
      const left = JSON.stringify(x[i]);
      const right = JSON.stringify(y[i]);
      if (left !== right) return `${collection}/${x[i]!.id}:\n${left.slice(0, 800)}\n${right.slice(0, 800)}`;
    }
  }
  return null;
}

/**
 * The events a generated data set becomes: its NDJSON lines ingested into a throw-away embedded log
 * (every one accepted), then read back in log order (optionally only the given type prefixes).
 */
export async function generatedLogEvents(
  options: GenerateOptions,
  typePrefixes?: readonly string[],
): Promise<RecordedEvent[]> {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-generated-'));
  const log = createSqliteEventLog(join(dir, 'events.sqlite'));
  try {
    const outcomes = await createIngestor(log, { followerProvider: options.followerProvider }).ingestBatch(
      [...generateLines(options)],
      'ndjson',
    );
    const refused = outcomes.find((o) => o.status !== 'accepted');
    if (refused) throw new Error(`a generated message was not accepted: ${JSON.stringify(refused)}`);
    return await readLog(log, typePrefixes);
  } finally {
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
