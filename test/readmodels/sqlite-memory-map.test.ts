/**
 * The embedded read store maps its file into memory only when told to (PULSEBOARD_SQLITE_MAP_MB):
 * seen from outside, as the operating system lists the process's mappings (Linux /proc/self/maps).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { parseConfig } from '../../config/config.ts';
import type { ReadStore } from '../../readmodels/port.ts';
import { generationPath } from '../../readmodels/sqlite/generations.ts';
import { createSqliteReadStore } from '../../readmodels/sqlite/sqlite-read-store.ts';
import { openGenerationSpace } from '../../service/stores.ts';

const mapped = (path: string) =>
  readFileSync('/proc/self/maps', 'utf8')
    .split('\n')
    .some((line) => line.endsWith(` ${path}`));

/**
 * A store at `path` holding a document, opened again to read it: the first store's close moves its
 * pages from the write-ahead log into the file, where the second reads them (through the map, if any).
 */
async function readSome(path: string, open: (path: string) => ReadStore): Promise<ReadStore> {
  const writer = open(path);
  const outcome = await writer.commit(
    'projects',
    [
      {
        id: 'p1',
        doc: { name: 'One' },
        state: null,
        seq: 1,
        writtenAt: '2026-11-01T00:00:00.000Z',
        sortKey: 'a',
        facet: 'public',
        keys: {},
      },
    ],
    1,
  );
  assert.ok(outcome.ok);
  await writer.close();
  const reader = open(path);
  assert.equal((await reader.get('projects', 'p1'))?.json, '{"name":"One"}');
  return reader;
}

describe.runIf(process.platform === 'linux')('the read store memory map', () => {
  it('maps none of the file by default, and the file with mapBytes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pulseboard-map-'));
    try {
      const withoutMap = join(dir, 'unmapped.sqlite');
      const unmapped = await readSome(withoutMap, (path) => createSqliteReadStore(path));
      assert.ok(!mapped(withoutMap), 'the file is not mapped');
      await unmapped.close();

      const withMap = join(dir, 'mapped.sqlite');
      const store = await readSome(withMap, (path) => createSqliteReadStore(path, { mapBytes: 64 * 1024 * 1024 }));
      assert.ok(mapped(withMap), 'the file is mapped');
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('PULSEBOARD_SQLITE_MAP_MB reaches the serving read store', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pulseboard-map-'));
    try {
      for (const [setting, expectMapped] of [
        [undefined, false],
        ['0', false],
        ['64', true],
      ] as const) {
        const dataDir = join(dir, setting ?? 'unset');
        const parsed = parseConfig({ PULSEBOARD_DATA_DIR: dataDir, PULSEBOARD_SQLITE_MAP_MB: setting });
        assert.ok(parsed.ok);
        const space = await openGenerationSpace(parsed.config);
        const path = generationPath(dataDir, 0);
        const store = await readSome(path, () => space.open(0));
        assert.equal(mapped(path), expectMapped, `PULSEBOARD_SQLITE_MAP_MB=${setting}`);
        await store.close();
        await space.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
