import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { runCli, startServe, stopChild, type ServeProcess } from '../support/cli.ts';
import { postgresSkipReason, scratchSchema, type ScratchSchema } from '../support/postgres.ts';
import { prng } from '../support/seed.ts';
import {
  checkAgainst,
  firstDifference,
  freshWalk,
  postgresSnapshot,
  sqliteSnapshot,
  startMirror,
  type MirrorChild,
  type MirrorSnapshot,
} from './support.ts';

const pgSkip = await postgresSkipReason();
const CHUNKS = 6;
const KILLS = 5;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Target = {
  name: string;
  to: string;
  snapshot: () => Promise<MirrorSnapshot>;
  truth: (walk: Map<string, string>) => Promise<Map<string, string>>;
};

/**
 * The proof of "exact by construction": mirrors into SQLite and PostgreSQL follow a server while it
 * ingests, are SIGKILLed five times at random moments and restarted, live through a `pulseboard
 * replay` and a server restart, and end holding exactly what a fresh walk of the server returns.
 */
describe('pulseboard mirror while the server ingests, is replayed and restarted, and the mirror is killed', () => {
  let dir: string;
  let serve: ServeProcess;
  let port = '';
  let schema: ScratchSchema | null = null;
  const chunks: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pulseboard-mirror-'));
    serve = await startServe({ PULSEBOARD_DATA_DIR: dir, PULSEBOARD_RATE_LIMIT: '100000' }, { key: true });
    assert.ok(serve.url && serve.key, 'the server started');
    port = new URL(serve.url).port;
    const file = join(dir, 'more.ndjson');
    const generated = await runCli(['generate', '--projects', '400', '--seed', '7', '--out', file]);
    assert.equal(generated.code, 0, generated.stderr);
    // The generator writes each project's history over days: later chunks rewrite projects of earlier ones.
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    const size = Math.ceil(lines.length / CHUNKS);
    for (let i = 0; i < CHUNKS; i++) {
      const chunk = join(dir, `chunk-${i}.ndjson`);
      writeFileSync(chunk, `${lines.slice(i * size, (i + 1) * size).join('\n')}\n`);
      chunks.push(chunk);
    }
    if (pgSkip === false) schema = await scratchSchema('pbmirror');
  });

  afterAll(async () => {
    if (serve) await stopChild(serve.child, 'SIGKILL');
    await schema?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('ends byte-equal to a fresh full walk, no row seq ever going back (SQLite, and PostgreSQL where one answers)', async () => {
    const sqliteFile = join(dir, 'mirror.sqlite');
    const targets: Target[] = [
      {
        name: 'sqlite',
        to: `sqlite:${sqliteFile}`,
        snapshot: async () => sqliteSnapshot(sqliteFile),
        truth: async (walk) => walk,
      },
    ];
    if (schema) {
      const s = schema;
      targets.push({
        name: 'postgres',
        to: s.url,
        snapshot: () => postgresSnapshot(s),
        truth: async (walk) => walk,
      });
    } else {
      console.log(`postgres part skipped: ${pgSkip}`);
    }
    const url = `http://127.0.0.1:${port}`;
    const start = (t: Target) =>
      startMirror(['--url', url, '--key', serve.key, '--to', t.to, '--limit', '10', '--wait', '5']);
    let mirrors: MirrorChild[] = targets.map(start);
    const last: (MirrorSnapshot | null)[] = targets.map(() => null);
    const random = prng(44);

    for (let i = 0; i < CHUNKS; i++) {
      const ingesting = runCli(['ingest', chunks[i]!], { env: { PULSEBOARD_DATA_DIR: dir } });
      if (i < KILLS) {
        // A random moment while the mirrors page through what is being written.
        await Promise.all(mirrors.map((m) => m.answered));
        await sleep(Math.floor(random() * 1500));
        for (const m of mirrors) m.child.kill('SIGKILL');
        await Promise.all(mirrors.map((m) => m.exited));
        for (const [t, target] of targets.entries()) {
          const now = await target.snapshot();
          assert.equal(checkAgainst(last[t]!, now), null, `${target.name} after kill ${i + 1}`);
          last[t] = now;
        }
        mirrors = targets.map(start);
      }
      const ingested = await ingesting;
      assert.equal(ingested.code, 0, ingested.stderr);
      if (i === 2) {
        // A replay builds the next generation beside the live one and switches; cursors stay valid.
        const replayed = await runCli(['replay'], { env: { PULSEBOARD_DATA_DIR: dir } });
        assert.equal(replayed.code, 0, replayed.stderr);
      }
      if (i === 3) {
        assert.equal(await stopChild(serve.child, 'SIGTERM'), 0);
        await sleep(1000);
        serve = {
          ...(await startServe({ PULSEBOARD_DATA_DIR: dir, PULSEBOARD_RATE_LIMIT: '100000', PORT: port })),
          key: serve.key,
        };
        assert.equal(new URL(serve.url).port, port, 'the server came back on its port');
      }
    }

    // Everything is written; the followers catch up by themselves.
    let difference: (string | null)[] = targets.map(() => 'not compared yet');
    for (let attempt = 0; attempt < 120 && difference.some((d) => d !== null); attempt++) {
      await sleep(1000);
      const walk = await freshWalk(url, serve.key);
      difference = await Promise.all(
        targets.map(async (t) => firstDifference(await t.snapshot(), await t.truth(walk))),
      );
    }
    for (const [t, target] of targets.entries())
      assert.equal(difference[t], null, `${target.name} equals a fresh walk`);
    assert.ok((await freshWalk(url, serve.key)).size >= 700, 'the sample and the generated projects');

    // SIGTERM finishes the page in hand and exits 0.
    for (const m of mirrors) m.child.kill('SIGTERM');
    for (const [t, m] of mirrors.entries()) {
      assert.equal(await m.exited, 0, m.stderr());
      assert.match(m.stderr(), /mirror: stopped/);
      const final = await targets[t]!.snapshot();
      assert.equal(checkAgainst(last[t]!, final), null, `${targets[t]!.name} at the end`);
    }
  });
});
