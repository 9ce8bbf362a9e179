/** The SQLite store's checkpoints, read once per event-loop turn: what a reader sees across turns and its own commits. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, it } from 'vitest';
import type { ReadStore } from '../../readmodels/port.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';

const dirs: string[] = [];
const opened: ReadStore[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function twoConnections() {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-checkpoint-turn-'));
  dirs.push(dir);
  const path = join(dir, 'read.sqlite');
  const reader = createSqliteReadStore(path);
  const writer = createSqliteReadStore(path);
  opened.push(reader, writer);
  return { reader, writer };
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

it("a store's own commit is seen at once, in the same turn", async () => {
  const { reader } = twoConnections();
  assert.equal(await reader.checkpoint('projects'), 0);
  await reader.commit('projects', [], 7);
  assert.equal(await reader.checkpoint('projects'), 7);
  assert.deepEqual(await reader.commit('projects', [], 9, 6), { ok: false, reason: 'checkpoint_moved', actual: 7 });
  assert.equal(await reader.checkpoint('projects'), 7);
});

it("another connection's commit is seen from the next turn on, for every collection", async () => {
  const { reader, writer } = twoConnections();
  assert.equal(await reader.checkpoint('keys'), 0);
  assert.equal(await reader.checkpoint('projects'), 0);
  await writer.commit('keys', [], 3);
  await writer.commit('projects', [], 5);
  await nextTurn();
  assert.equal(await reader.checkpoint('keys'), 3);
  assert.equal(await reader.checkpoint('projects'), 5);
  assert.equal(await reader.checkpoint('owners'), 0);
});

it("within a turn another connection's commit is seen when asked for fresh, and by every read after that", async () => {
  const { reader, writer } = twoConnections();
  assert.equal(await reader.checkpoint('projects'), 0);
  await writer.commit('projects', [], 4);
  assert.equal(await reader.checkpoint('projects', { fresh: true }), 4);
  assert.equal(await reader.checkpoint('projects'), 4);
});

it("kept checkpoints follow every later commit of another connection and of the store's own, turn after turn", async () => {
  const { reader, writer } = twoConnections();
  let previous = 0;
  for (const [position, by] of [
    [2, writer],
    [3, reader],
    [6, writer],
    [8, writer],
    [9, reader],
  ] as const) {
    await nextTurn();
    assert.equal(await reader.checkpoint('projects'), previous);
    await by.commit('projects', [], position);
    previous = position;
    await nextTurn();
    assert.equal(await reader.checkpoint('projects'), position, `after the commit to ${position}`);
    assert.equal(await writer.checkpoint('projects', { fresh: true }), position);
  }
});
