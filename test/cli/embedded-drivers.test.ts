/**
 * The embedded default loads none of the production stores' drivers: the KurrentDB client (with its
 * native bridge), the MongoDB driver, kafkajs, ioredis and pg are imported only when configured.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'vitest';
import { startServe, stopChild } from '../support/cli.ts';

const DRIVERS = [
  '@kurrent/kurrentdb-client',
  '@kurrent/bridge',
  '@grpc/grpc-js',
  'mongodb',
  'kafkajs',
  'ioredis',
  'pg',
];

it('`pulseboard serve` on the embedded stores answers reads without loading a production driver', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-embedded-drivers-'));
  const trace = join(dir, 'packages.txt');
  const hook = join(import.meta.dirname, '../support/package-trace.ts');
  try {
    const { child, url, key } = await startServe(
      {
        PULSEBOARD_DATA_DIR: join(dir, 'data'),
        PULSEBOARD_PACKAGE_TRACE: trace,
        NODE_OPTIONS: `--import ${hook}`,
      },
      { key: true },
    );
    try {
      for (const path of ['/v1/projects', '/v1/search?q=chain', '/v1/calltracker/calls']) {
        const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${key}` } });
        assert.equal(res.status, 200, path);
      }
    } finally {
      assert.equal(await stopChild(child, 'SIGTERM'), 0);
    }
    const loaded = new Set(readFileSync(trace, 'utf8').split('\n').filter(Boolean));
    // The trace saw the packages the server does load.
    for (const used of ['fastify', 'zod', '@modelcontextprotocol/server']) assert.ok(loaded.has(used), used);
    assert.deepEqual(
      DRIVERS.filter((name) => loaded.has(name)),
      [],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
