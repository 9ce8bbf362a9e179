/**
 * The analysts' export (issue 43, item 4): the files read back with DuckDB hold, as of the same
 * point, what the API answers (the board row for row, every field), the point and schema version in
 * each file's metadata, and no thesis text anywhere.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, it, vi } from 'vitest';
import { exportAsOf, EXPORT_SCHEMA_VERSION } from '../../service/analyst-export.ts';
import { namedPoint, resolvePoint } from '../../service/history-board.ts';
import { appendBoardHistory } from '../support/board-history.ts';
import { makeCall, recordCall } from '../support/calls-fixtures.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { runCli } from '../support/cli.ts';

const START = Date.parse('2026-11-01T00:00:00Z');
const THESIS = (n: number) => `Secret thesis number ${n} that must never leave the service`;

describe('export --format parquet|ndjson --as-of', () => {
  let h: Harness;
  let key: string;
  let duck: DuckDBConnection;
  let middle: string;

  beforeAll(async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: START });
    h = await createHarness();
    key = await h.key('analyst', ['allow']);
    await appendBoardHistory(h.stores.log, { projects: 120, steps: 400, seed: 5 });
    for (let n = 0; n < 12; n++) {
      vi.advanceTimersByTime(1000);
      await recordCall(h, makeCall(n, { createdAt: new Date(Date.now()).toISOString(), thesis: THESIS(n) }));
    }
    await h.stores.catchUp();
    vi.advanceTimersByTime(60_000);
    middle = new Date(Date.now()).toISOString();
    vi.advanceTimersByTime(60_000);
    await appendBoardHistory(h.stores.log, { projects: 120, steps: 200, seed: 6, prefix: 'after' });
    for (let n = 12; n < 15; n++)
      await recordCall(h, makeCall(n, { createdAt: new Date(Date.now()).toISOString(), thesis: THESIS(n) }));
    await h.stores.catchUp();
    duck = await (await DuckDBInstance.create(':memory:')).connect();
  }, 120_000);
  afterAll(async () => {
    vi.useRealTimers();
    duck?.closeSync();
    await h?.close();
  });

  async function exportTo(format: 'parquet' | 'ndjson', asOf: string) {
    const history = h.stores.store.history!;
    const archive = await h.stores.log.archiveId();
    const point = await resolvePoint({ log: h.stores.log, store: h.stores.store, history, archive }, 'asOf', asOf);
    assert.ok(point.ok);
    const dir = join(h.dir, `export-${format}-${point.value.seq}`);
    const { mkdirSync } = await import('node:fs');
    mkdirSync(dir);
    const named = namedPoint(archive, point.value);
    const summary = await exportAsOf({
      log: h.stores.log,
      store: h.stores.store,
      point: point.value,
      named,
      format,
      dir,
    });
    return { dir, summary, named };
  }

  /** Every project of the board as of a point, through the API's pages. */
  async function boardFromApi(asOf: string): Promise<any[]> {
    const rows: any[] = [];
    for (let page = 1; ; page++) {
      const body = (await h.get(`/v1/projects?page=${page}&asOf=${encodeURIComponent(asOf)}`, key)).json();
      rows.push(...body.projects);
      if (page >= body.totalPages) return rows;
    }
  }

  const rowsOf = async (sql: string) =>
    (await duck.runAndReadAll(sql)).getRowObjectsJson() as Record<string, unknown>[];

  it('parquet: the board as of the point, row for row and field for field, with the point in the metadata', async () => {
    const { dir, summary, named } = await exportTo('parquet', middle);
    assert.deepEqual(readdirSync(dir).sort(), ['calls.parquet', 'events.parquet', 'projects.parquet']);
    const api = await boardFromApi(named.cursor);
    assert.equal(summary.projects, api.length);
    const file = join(dir, 'projects.parquet');
    const { n } = (await rowsOf(`SELECT count(*)::INTEGER AS n FROM read_parquet('${file}')`))[0] as { n: number };
    assert.equal(n, api.length);
    // Nested objects are JSON text; scalars typed. Rebuilt into Projects they are the API's.
    const rows = await rowsOf(`SELECT * EXCLUDE (seq, writtenAt) FROM read_parquet('${file}')`);
    const projects = rows.map((row) =>
      Object.fromEntries(
        Object.entries(row).map(([k, v]) => [k, typeof v === 'string' && /^[[{]/.test(v) ? JSON.parse(v) : v]),
      ),
    );
    assert.deepEqual(projects, api);
    // One query an analyst would run: the dossier share of the board then.
    const facets = await rowsOf(
      `SELECT (dossier IS NOT NULL) AS has_dossier, count(*)::INTEGER AS n FROM read_parquet('${file}') GROUP BY 1 ORDER BY 1`,
    );
    const withDossier = (await h.get(`/v1/projects?page=1&has_dossier=true&asOf=${named.cursor}`, key)).json().total;
    assert.equal(facets.find((f) => f.has_dossier === true)?.n ?? 0, withDossier);

    for (const name of ['projects', 'calls', 'events']) {
      const kv = await rowsOf(
        `SELECT key::VARCHAR AS key, value::VARCHAR AS value FROM parquet_kv_metadata('${join(dir, `${name}.parquet`)}')`,
      );
      const meta = Object.fromEntries(kv.map((r) => [r.key, r.value]));
      assert.equal(meta['pulseboard.schema_version'], EXPORT_SCHEMA_VERSION);
      assert.equal(meta['pulseboard.as_of_cursor'], named.cursor);
      assert.equal(meta['pulseboard.as_of'], named.at);
    }

    // Calls created by the point, without thesis text; events up to it, private fields withheld.
    const calls = await rowsOf(`SELECT * FROM read_parquet('${join(dir, 'calls.parquet')}')`);
    assert.equal(calls.length, 12);
    assert.ok(!Object.keys(calls[0]!).includes('thesisText'));
    const events = await rowsOf(
      `SELECT type, data::VARCHAR AS data FROM read_parquet('${join(dir, 'events.parquet')}') WHERE type = 'call.recorded'`,
    );
    assert.equal(events.length, 12);
    assert.ok(events.every((e) => JSON.parse(e.data as string).thesisText === '[withheld]'));
    for (const name of readdirSync(dir))
      assert.ok(!readFileSync(join(dir, name), 'latin1').includes('Secret thesis'), `${name} holds thesis text`);
  });

  it('ndjson: the same rows, and a manifest naming the point', async () => {
    const { dir, named, summary } = await exportTo('ndjson', middle);
    const lines = readFileSync(join(dir, 'projects.ndjson'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const api = await boardFromApi(named.cursor);
    assert.deepEqual(
      lines.map(({ seq: _s, writtenAt: _w, ...p }) => p),
      api,
    );
    assert.equal(summary.events, readFileSync(join(dir, 'events.ndjson'), 'utf8').trim().split('\n').length);
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
    assert.equal(manifest['pulseboard.as_of_cursor'], named.cursor);
    for (const name of readdirSync(dir)) assert.ok(!readFileSync(join(dir, name), 'utf8').includes('Secret thesis'));
  });

  it('the CLI writes the files and refuses bad flags with a usage error', async () => {
    const out = join(h.dir, 'cli-export');
    const ok = await runCli(['export', '--format', 'parquet', '--as-of', middle, '--out', out], {
      env: { PULSEBOARD_DATA_DIR: h.dir },
    });
    assert.equal(ok.code, 0, ok.stderr);
    assert.deepEqual(readdirSync(out).sort(), ['calls.parquet', 'events.parquet', 'projects.parquet']);
    const bad = await runCli(['export', '--format', 'csv', '--out', out], { env: { PULSEBOARD_DATA_DIR: h.dir } });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--format must be parquet or ndjson/);
    const badPoint = await runCli(['export', '--format', 'parquet', '--as-of', 'yesterday', '--out', out], {
      env: { PULSEBOARD_DATA_DIR: h.dir },
    });
    assert.equal(badPoint.code, 2, badPoint.stderr);
  });
});
