/** `keys list` reads every key, however many: keyset pages until one comes back short. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'vitest';
import { parseConfig } from '../../config/config.ts';
import type { KeyDoc } from '../../projectors/access.ts';
import { allKeys, issueKey, revokeKey, type IssuedKey } from '../../service/access.ts';
import { openStores } from '../../service/stores.ts';

it('lists every key once, newest first, across pages (a page size that divides the keys and one that does not)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-keys-listing-'));
  const parsed = parseConfig({ PULSEBOARD_DATA_DIR: dir });
  assert.ok(parsed.ok);
  const stores = await openStores(parsed.config);
  try {
    const issued: IssuedKey[] = [];
    // Issued a millisecond or more apart, some within the same millisecond (ties broken by id).
    for (let i = 0; i < 9; i += 1)
      issued.push(
        await issueKey(stores, `owner-${i % 4}`, { now: new Date(Date.UTC(2026, 10, 1, 0, 0, i - (i % 2))) }),
      );
    await revokeKey(stores, issued[4]!.keyId);
    for (const pageSize of [3, 4, 1000]) {
      const listed: KeyDoc[] = [];
      for await (const key of allKeys(stores.store, pageSize)) listed.push(key);
      assert.deepEqual(
        new Set(listed.map((k) => k.keyId)),
        new Set(issued.map((k) => k.keyId)),
        `page size ${pageSize}: every key`,
      );
      assert.equal(listed.length, issued.length, `page size ${pageSize}: each key once`);
      const order = listed.map((k) => [k.issuedAt, k.keyId].join(' '));
      assert.deepEqual(order, [...order].sort().reverse(), `page size ${pageSize}: newest first`);
      assert.ok(listed.find((k) => k.keyId === issued[4]!.keyId)?.revokedAt, 'the revoked key says so');
    }
  } finally {
    await stores.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
