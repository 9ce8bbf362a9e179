import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it } from 'vitest';
import { openSqliteMirrorThread } from '../../bin/mirror/sqlite-thread.ts';
import { sqliteSnapshot } from './support.ts';

describe('the SQLite mirror on a thread of its own', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-mirror-thread-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('commits in the order asked, refuses a stale cursor, and answers what the store holds', async () => {
    const file = join(dir, 'mirror.sqlite');
    const store = await openSqliteMirrorThread(file);
    try {
      const start = await store.state();
      assert.deepEqual(start, { cursor: null, seq: 0 });
      // Two commits asked for at once are carried out one after the other.
      const [first, second] = await Promise.all([
        store.commit(start, [{ id: 'a', json: '{"id":"a","v":1}' }], 'c1', 'test'),
        store.commit(
          { cursor: 'c1', seq: 1 },
          [
            { id: 'a', json: '{"id":"a","v":2}' },
            { id: 'b', json: '{"id":"b"}' },
          ],
          'c2',
          'test',
        ),
      ]);
      assert.deepEqual(first, { ok: true, state: { cursor: 'c1', seq: 1 } });
      assert.deepEqual(second, { ok: true, state: { cursor: 'c2', seq: 3 } });
      const stale = await store.commit(start, [{ id: 'c', json: '{"id":"c"}' }], 'c3', 'test');
      assert.equal(stale.ok, false);
      assert.deepEqual(await store.state(), { cursor: 'c2', seq: 3 });
    } finally {
      await store.close();
    }
    const held = sqliteSnapshot(file);
    assert.deepEqual(Object.fromEntries(held.rows), {
      a: { json: '{"id":"a","v":2}', seq: 2 },
      b: { json: '{"id":"b"}', seq: 3 },
    });
    assert.equal(held.cursor, 'c2');
  });

  it("fails to open with SQLite's reason, and a closed store refuses work", async () => {
    await assert.rejects(openSqliteMirrorThread(join(dir, 'no-such-folder', 'mirror.sqlite')), /unable to open/);
    const store = await openSqliteMirrorThread(join(dir, 'closed.sqlite'));
    await store.close();
    await assert.rejects(store.state(), /the SQLite thread ended/);
  });
});
