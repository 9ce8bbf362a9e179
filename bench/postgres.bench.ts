/**
 * The PostgreSQL engine's costs (POSTGRES_URL), each a ratio to a baseline measured in the same run, at 10k
 * projects (`--projects 10000,100000` adds 100k; each data set is built once into the database `pulseboard_bench_<n>`
 * of PULSEBOARD_BENCH_POSTGRES_URL's server and reused, `--rebuild` builds again; `--parts append,writes,reads`):
 *   append     log.appendBatch of the service's events vs a raw multi-row INSERT of the same rows
 *   catch-up   the live runner from zero, and replay (each with its own limits), vs a raw read of the log plus raw
 *              inserts of every row of the read models it built (same tables, same indexes), through pg
 *   reads      each read under load (autocannon) vs bare Fastify sending the same bytes after the same number of
 *              raw queries; a deep board page vs the first
 *   mirror     a delta walk of every project over HTTP vs one raw SELECT of the same rows
 *   memory     the server's RSS after the read load
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import pg from 'pg';
import { buildApp } from '../api/app.ts';
import { parseConfig, type Config } from '../config/config.ts';
import { openEventLog } from '../eventstore/open.ts';
import type { RecordedEvent, StreamAppend } from '../eventstore/port.ts';
import { defaultCalls } from '../ingest/generate/context.ts';
import { generateLines } from '../ingest/generate/generate.ts';
import { DEFAULT_INGEST_BATCH } from '../ingest/ndjson.ts';
import { createIngestor } from '../ingest/pipeline.ts';
import { projectors } from '../projectors/registry.ts';
import { createProjectionRunner } from '../projectors/runner.ts';
import { issueKey } from '../service/access.ts';
import { createRateLimiter } from '../service/rate/create.ts';
import { replayReadModels } from '../service/replay.ts';
import { createServices } from '../service/services.ts';
import { openGenerationSpace, openStores, projectionLimits } from '../service/stores.ts';
import { BENCH_SEED, dataSetSpec } from './dataset.ts';
import { median } from './median.ts';

type LoadResult = { requests: { average: number }; non2xx: number; errors: number };
const autocannon = createRequire(import.meta.url)('autocannon') as (options: object) => Promise<LoadResult>;

const SERVER = process.env.PULSEBOARD_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ROUNDS = Number(process.env.BENCH_PG_ROUNDS ?? 3);
const LOAD_SECONDS = Number(process.env.BENCH_PG_LOAD_SECONDS ?? 3);
const EVENT_COLUMNS = 'position, id, stream, revision, type, data, metadata, recorded_at';

const urlOf = (database: string) => Object.assign(new URL(SERVER), { pathname: `/${database}` }).toString();
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const out = (line: string) => process.stdout.write(`${line}\n`);

function configFor(env: Record<string, string>): Config {
  const parsed = parseConfig({ ...env, PULSEBOARD_RATE_LIMIT: '1000000000', PULSEBOARD_LOG_LEVEL: 'silent' });
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.config;
}
const pgConfig = (url: string) => configFor({ POSTGRES_URL: url });

async function admin<T>(work: (client: pg.Client) => Promise<T>, url = SERVER): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return work(client).finally(() => client.end());
}
const dropDatabase = (name: string) => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
const recreateDatabase = (name: string) =>
  dropDatabase(name).then(() => admin((c) => c.query(`CREATE DATABASE ${name}`)));

/** `rows` into `table` by multi-row INSERTs of `perStatement` rows (a statement takes at most 65,535 parameters). */
async function insertRows(c: pg.Client, table: string, columns: string, rows: unknown[][], perStatement: number) {
  for (let i = 0; i < rows.length; i += perStatement) {
    const part = rows.slice(i, i + perStatement);
    const values = part.map((row, r) => `(${row.map((_, k) => `$${r * row.length + k + 1}`).join(', ')})`);
    await c.query(`INSERT INTO ${table} (${columns}) VALUES ${values.join(', ')}`, part.flat());
  }
}

const eventRow = (e: RecordedEvent, recordedAt: string | Date = e.recordedAt): unknown[] => [
  ...[e.position, e.id, e.stream, e.revision, e.type],
  ...[JSON.stringify(e.data), JSON.stringify(e.metadata), recordedAt],
];

/**
 * The data set's database, built when missing: generated lines ingested (the public ingest path) into an embedded
 * log, its events copied into PostgreSQL's by multi-row INSERTs (ingesting into PostgreSQL directly, a transaction
 * per ingest batch, took over 20 minutes at 100k), then the read models caught up and analysed (as autovacuum would).
 */
async function ensureDatabase(projects: number, rebuild: boolean): Promise<string> {
  const database = `pulseboard_bench_${projects}`;
  const done = `SELECT to_regclass('bench_complete') IS NOT NULL AS done`;
  // A database missing (connection refused) or built partly is built again.
  const complete = admin(async (c) => (await c.query(done)).rows[0].done as boolean, urlOf(database));
  if (!rebuild && (await complete.catch(() => false))) return database;
  await recreateDatabase(database);
  const [started, dir] = [performance.now(), mkdtempSync(join(tmpdir(), 'pulseboard-pg-bench-'))];
  const config = pgConfig(urlOf(database));
  const stores = await openStores(config);
  try {
    await stores.log.headPosition(); // the log's tables made, for the copy
    const embedded = await openEventLog(configFor({ PULSEBOARD_DATA_DIR: dir }));
    const ingestor = createIngestor(embedded, { followerProvider: config.PULSEBOARD_FOLLOWER_PROVIDER });
    const spec = dataSetSpec(projects);
    const options = { ...spec, seed: BENCH_SEED, calls: spec.calls || defaultCalls(projects), hotContractCalls: 0 };
    const batch: string[] = [];
    for (const line of generateLines({ ...options, followerProvider: config.PULSEBOARD_FOLLOWER_PROVIDER }))
      if (batch.push(line) === DEFAULT_INGEST_BATCH) await ingestor.ingestBatch(batch.splice(0), 'ndjson');
    if (batch.length > 0) await ingestor.ingestBatch(batch, 'ndjson');
    let events = 0;
    await admin(async (c) => {
      for (let page = await embedded.readAll({ afterPosition: 0, limit: 20_000 }); page.length > 0;) {
        const rows = page.map((e) => eventRow(e));
        await insertRows(c, 'pulseboard_events', EVENT_COLUMNS, rows, 5_000);
        events += page.length;
        page = await embedded.readAll({ afterPosition: page[page.length - 1]!.position, limit: 20_000 });
      }
    }, urlOf(database));
    await embedded.close();
    out(`  ${projects}: ${events} events ingested and copied in ${seconds(performance.now() - started)}; catching up`);
    await stores.catchUp();
    await issueKey(stores, 'bench');
    await stores.catchUp();
  } finally {
    await stores.close();
    rmSync(dir, { recursive: true, force: true });
  }
  await admin((c) => c.query('ANALYZE; CREATE TABLE bench_complete ()'), urlOf(database));
  out(`  ${projects}: data set built in ${seconds(performance.now() - started)}`);
  return database;
}

/** A raw read of the whole log through pg, its JSON parsed as any reader of it must. */
async function rawLogRead(url: string): Promise<{ ms: number; events: number }> {
  return admin(async (c) => {
    let [events, started] = [0, performance.now()];
    const sql = `SELECT ${EVENT_COLUMNS} FROM pulseboard_events WHERE position > $1 ORDER BY position LIMIT 10000`;
    for (let after = 0; ;) {
      const { rows } = await c.query(sql, [after]);
      if (rows.length === 0) return { ms: performance.now() - started, events };
      for (const row of rows) [JSON.parse(row.data as string), JSON.parse(row.metadata as string)];
      events += rows.length;
      after = Number(rows[rows.length - 1].position);
    }
  }, url);
}

/** Every row of a generation's tables inserted again into copies of them (indexes included), 1,000 a statement. */
async function rawModelInserts(url: string, schema: string): Promise<{ ms: number; rows: number }> {
  return admin(async (c) => {
    const tables = await c.query(`SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename`, [schema]);
    await c.query('DROP SCHEMA IF EXISTS bench_raw CASCADE; CREATE SCHEMA bench_raw');
    let [ms, total] = [0, 0];
    for (const table of tables.rows.map((r) => r.tablename as string)) {
      await c.query(`CREATE TABLE bench_raw."${table}" (LIKE "${schema}"."${table}" INCLUDING ALL)`);
      const { rows, fields } = await c.query({ text: `SELECT * FROM "${schema}"."${table}"`, rowMode: 'array' });
      const started = performance.now();
      await insertRows(c, `bench_raw."${table}"`, fields.map((f) => `"${f.name}"`).join(', '), rows, 1000);
      ms += performance.now() - started;
      total += rows.length;
    }
    await c.query('DROP SCHEMA bench_raw CASCADE');
    return { ms, rows: total };
  }, url);
}

/** The service's appends of the log's first 100,000 events into a fresh log vs raw multi-row INSERTs of the same rows. */
async function appendRatio(database: string): Promise<string> {
  const scratch = `${database}_append`;
  await recreateDatabase(scratch);
  try {
    const source = await openStores(pgConfig(urlOf(database)));
    const events = await source.log.readAll({ afterPosition: 0, limit: 100_000 });
    await source.close();
    // Batches as ingest makes them: consecutive events, grouped by stream within the batch.
    const batches: { appends: StreamAppend[]; rows: unknown[][] }[] = [];
    for (let i = 0; i < events.length; i += DEFAULT_INGEST_BATCH) {
      const part = events.slice(i, i + DEFAULT_INGEST_BATCH);
      const appends: StreamAppend[] = [...Map.groupBy(part, (e) => e.stream)].map(([stream, own]) => {
        return { stream, events: own.map(({ id, type, data, metadata }) => ({ id, type, data, metadata })) };
      });
      batches.push({ appends, rows: part.map((e) => eventRow(e, new Date())) });
    }
    const stores = await openStores(pgConfig(urlOf(scratch)));
    let started = performance.now();
    for (const batch of batches) await stores.log.appendBatch(batch.appends);
    const serviceMs = performance.now() - started;
    await stores.close();
    const rawMs = await admin(async (c) => {
      await c.query(`CREATE TABLE raw_events (LIKE pulseboard_events INCLUDING ALL)`);
      started = performance.now();
      // 5,000 rows a statement, as the adapter's own INSERT.
      for (const batch of batches) await insertRows(c, 'raw_events', EVENT_COLUMNS, batch.rows, 5000);
      return performance.now() - started;
    }, urlOf(scratch));
    return `append: ${events.length} events in ${batches.length} batches: ${seconds(serviceMs)}; raw multi-row INSERT ${seconds(rawMs)}: ${(rawMs / serviceMs).toFixed(2)} of raw (goal >= 0.5)`;
  } finally {
    await dropDatabase(scratch);
  }
}

/** A catch-up from zero with the live limits into a spare generation, and a replay, against the raw baseline. */
async function writeRatios(database: string): Promise<string[]> {
  const url = urlOf(database);
  const config = pgConfig(url);
  const raw = await rawLogRead(url);
  const space = await openGenerationSpace(config);
  const stores = await openStores(config);
  try {
    const spare = Math.max(...(await space.list()), 0) + 100;
    const store = space.open(spare);
    const [live, replay] = [projectionLimits(config, 'live'), projectionLimits(config, 'replay')];
    let started = performance.now();
    await createProjectionRunner(stores.log, store, projectors, live).catchUp();
    const catchUpMs = performance.now() - started;
    await store.close();
    const inserts = await rawModelInserts(url, `pulseboard_g${spare}`);
    await space.remove(spare);
    const base = raw.ms + inserts.ms;
    started = performance.now();
    const replayed = await replayReadModels({ space, log: stores.log, projectors, releaseTimeoutMs: 5_000, ...replay });
    const replayMs = performance.now() - started;
    if (!replayed.ok) throw new Error(replayed.reason);
    return [
      `catch-up: ${seconds(catchUpMs)}; raw baseline: read of the log (${raw.events} events) ${seconds(raw.ms)} + inserts of the ${inserts.rows} rows ${seconds(inserts.ms)} = ${seconds(base)}: ${(catchUpMs / base).toFixed(2)}x (goal <= 2.5)`,
      `replay: ${seconds(replayMs)}: ${(replayMs / base).toFixed(2)}x the same raw baseline (goal <= 2.5)`,
    ];
  } finally {
    await stores.close();
    await space.close();
  }
}

type Reply = Record<string, unknown>;

/** This file forked with `args` (a server of the read load), once it listens. */
async function startChild(args: string[]): Promise<{ port: number; request(m: object): Promise<Reply>; stop(): void }> {
  const child = fork(import.meta.filename, args, {
    execArgv: ['--disable-warning=ExperimentalWarning', '--max-semi-space-size=8', '--heap-growing-percent=50'],
    env: { ...process.env, MALLOC_ARENA_MAX: '2' },
  });
  const replies: ((value: Reply) => void)[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bench server exited (${code})`)));
    child.on('message', (m: Reply) => (m['listening'] ? resolve(Number(m['listening'])) : replies.shift()?.(m)));
  });
  const request = (message: object) => new Promise<Reply>((resolve) => (replies.push(resolve), child.send(message)));
  return { port, request, stop: () => child.kill('SIGTERM') };
}

/** Child: the service over the data set; counts the queries a request makes, reports its memory. */
async function serveApp(url: string): Promise<void> {
  let queries = 0;
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
    queries += 1;
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  const config = pgConfig(url);
  const stores = await openStores(config);
  const app = buildApp(createServices({ config, stores, limiter: await createRateLimiter(config) }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  process.on('message', async (message: { count?: { path: string; key: string }; memory?: true }) => {
    if (message.memory) process.send!({ rss: process.memoryUsage().rss });
    if (!message.count) return;
    const request = { url: message.count.path, headers: { authorization: `Bearer ${message.count.key}` } };
    await app.inject(request);
    const before = queries;
    const res = await app.inject(request);
    const { statusCode: status, body, headers } = res;
    process.send!({ queries: queries - before, status, body, type: headers['content-type'] });
  });
  process.send!({ listening: (app.server.address() as { port: number }).port });
}

/** Child: bare Fastify answering each path with the recorded bytes after that path's number of raw queries. */
async function serveBare(url: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  const recorded = new Map<string, { queries: number; body: Buffer; type: string }>();
  const server = Fastify({ logger: false });
  server.get('*', async (request, reply) => {
    const entry = recorded.get(request.url);
    if (!entry) return reply.code(404).send();
    for (let i = 0; i < entry.queries; i++) await pool.query('SELECT 1');
    return reply.type(entry.type).send(entry.body);
  });
  await server.listen({ host: '127.0.0.1', port: 0 });
  process.on('message', ({ record: r }: { record: { path: string; queries: number; body: string; type: string } }) => {
    recorded.set(r.path, { queries: r.queries, body: Buffer.from(r.body), type: r.type });
    process.send!({});
  });
  process.send!({ listening: (server.server.address() as { port: number }).port });
}

async function readRatios(database: string): Promise<string[]> {
  const url = urlOf(database);
  const stores = await openStores(pgConfig(url));
  const { key } = await issueKey(stores, 'bench-reads');
  await stores.catchUp().finally(() => stores.close());
  const [app, bare] = [await startChild(['--serve-app', url]), await startChild(['--serve-bare', url])];
  const headers = { authorization: `Bearer ${key}` };
  type Page = { totalPages: number; projects: { id: string; handle: string }[]; cursor: string };
  const get = async (path: string) =>
    (await (await fetch(`http://127.0.0.1:${app.port}${path}`, { headers })).json()) as Page;
  const load = async (port: number, path: string) => {
    const target = `http://127.0.0.1:${port}${path}`;
    const result = await autocannon({ url: target, connections: 10, duration: LOAD_SECONDS, headers });
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`${path}: failures under load`);
    return result.requests.average;
  };
  const measured = () => ({ queries: 0, app: [] as number[], bare: [] as number[] });
  try {
    const first = await get('/v1/projects');
    const { id, handle } = first.projects[0]!;
    const reads = Object.entries({
      'board page': ['/v1/projects', 0.8],
      'deep board page': [`/v1/projects?page=${first.totalPages}`, 0.8],
      'delta page': ['/v1/projects?since=1970-01-01T00:00:00Z&limit=100', 0.8],
      'call page': ['/v1/calltracker/calls', 0.8],
      'one project': [`/v1/projects/${encodeURIComponent(handle)}`, 0.5],
      search: [`/v1/search?q=${encodeURIComponent(id)}`, 0.5],
    } as const).map(([name, [path, goal]]) => ({ name, path, goal, ...measured() }));
    for (const read of reads) {
      const counted = await app.request({ count: { path: read.path, key } });
      if (counted['status'] !== 200) throw new Error(`${read.path}: ${String(counted['status'])}`);
      read.queries = Number(counted['queries']);
      await bare.request({ record: { path: read.path, ...counted } });
    }
    for (let round = 0; round < ROUNDS; round++)
      for (const read of reads) {
        read.app.push(await load(app.port, read.path));
        read.bare.push(await load(bare.port, read.path));
      }
    const lines = reads.map(
      (r) =>
        `${r.name}: ${Math.round(median(r.app))} req/s, bare Fastify after the same ${r.queries} queries ${Math.round(median(r.bare))} req/s: ${median(r.app.map((x, i) => x / r.bare[i]!)).toFixed(2)} (goal >= ${r.goal})`,
    );
    const deep = median(reads[0]!.app) / median(reads[1]!.app);
    lines.push(`deep board page: ${deep.toFixed(2)}x the first page's time (goal <= 1.3)`);

    // The mirror: every project by delta pages over HTTP, against one raw SELECT of the same rows.
    let started = performance.now();
    let rows = 0;
    for (let page = await get(reads[2]!.path); page.projects.length > 0;) {
      rows += page.projects.length;
      page = await get(`/v1/projects?cursor=${page.cursor}&limit=100`);
    }
    const walkMs = performance.now() - started;
    const selected = await admin(async (c) => {
      const live = (await c.query('SELECT generation FROM pulseboard.pointer').catch(() => null))?.rows[0]?.generation;
      started = performance.now();
      const sql = `SELECT doc FROM "pulseboard_g${live ?? 0}".docs WHERE collection = 'projects' ORDER BY seq, id`;
      return (await c.query(sql)).rowCount;
    }, url);
    const selectMs = performance.now() - started;
    lines.push(
      `delta mirror: ${rows} projects in ${seconds(walkMs)}; one raw SELECT of ${selected} rows ${seconds(selectMs)}: ${(selectMs / walkMs).toFixed(2)} (goal >= 0.3)`,
    );
    const memory = await app.request({ memory: true });
    lines.push(`server RSS after the read load: ${Math.round(Number(memory['rss']) / 1048576)} MB (goal <= 300 MB)`);
    return lines;
  } finally {
    app.stop();
    bare.stop();
  }
}

// Not strict: `npm run bench` hands every bench the same arguments.
const options = { projects: { type: 'string' }, parts: { type: 'string' }, rebuild: { type: 'boolean' } } as const;
const { values } = parseArgs({ strict: false, options });
const [child, childUrl] = process.argv.slice(2);
if (child === '--serve-app') await serveApp(childUrl!);
else if (child === '--serve-bare') await serveBare(childUrl!);
else {
  const parts = new Set(String(values.parts ?? 'append,writes,reads').split(','));
  const sizes = String(values.projects ?? '10000').split(',');
  for (const projects of sizes.map(Number)) {
    out(`PostgreSQL, ${projects} projects`);
    const database = await ensureDatabase(projects, values.rebuild === true);
    if (parts.has('append')) out(`  ${await appendRatio(database)}`);
    if (parts.has('writes')) for (const line of await writeRatios(database)) out(`  ${line}`);
    if (parts.has('reads')) for (const line of await readRatios(database)) out(`  ${line}`);
  }
}
