import type { EventLog } from '../../eventstore/port.ts';
import { sourceEventId } from '../../events/ids.ts';
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

/** Appends a varied stream of project events (sightings, votes, dossiers, checks) one by one. */
export async function appendProjectHistory(log: EventLog, options: { projects: number; steps: number; seed: number; prefix?: string }) {
  const rand = prng(options.seed);
  const prefix = options.prefix ?? 'm';
  for (let step = 0; step < options.steps; step++) {
    const n = Math.floor(rand() * options.projects);
    const projectId = `proj-${n}`;
    const at = day(Math.floor(step / 50), step % 24);
    const pick = rand();
    let type: string;
    let data: Record<string, unknown>;
    if (pick < 0.55) {
      type = 'project.sighted';
      data = { projectId, at, fol: Math.floor(rand() * 10_000), handle: rand() < 0.1 ? `h${Math.floor(rand() * 20)}` : undefined };
      if (data.handle === undefined) delete data.handle;
    } else if (pick < 0.75) {
      type = 'vote.cast';
      data = { projectId, at, voterId: `u${Math.floor(rand() * 40)}`, name: 'n', avatar: null, direction: ['up', 'down', 'none'][Math.floor(rand() * 3)] };
    } else if (pick < 0.85) {
      type = 'calltracker.checked';
      data = { projectId, at, status: 'matched', historyComplete: rand() < 0.5, posts: 3, firstMcap: 10, mcap: 20 };
    } else if (pick < 0.95) {
      type = 'research.updated';
      data = { projectId, at, state: ['queued', 'ready', 'failed'][Math.floor(rand() * 3)] };
    } else {
      type = 'rival.listed';
      data = { projectId, at };
    }
    await log.append(`project-${projectId}`, [{ id: sourceEventId(type, `${prefix}-${step}`), type, data, metadata: {} }]);
  }
}

/** Every stored document of every read model, as comparable text. */
export async function dumpReadModels(store: ReadStore): Promise<Record<string, StoredDoc[]>> {
  const out: Record<string, StoredDoc[]> = {};
  for (const p of projectors) {
    const rows = await store.list(p.collection, { offset: 0, limit: 1_000_000 });
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
