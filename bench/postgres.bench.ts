/**
 * The PostgreSQL engine's costs (POSTGRES_URL), each a ratio to a baseline measured in the same run,
 * at 10k projects (`--projects 10000,100000` adds 100k; data sets are built once into the database
 * `pulseboard_bench_<projects>` of PULSEBOARD_BENCH_POSTGRES_URL's server and reused, `--rebuild`
 * builds again):
 *   append     log.appendBatch of the service's events vs a raw multi-row INSERT of the same rows
 *   catch-up   the live runner from zero, and replay (each with its own limits), vs a raw read of the log plus raw inserts of
 *              every row of the read models it built (same tables, same indexes), through pg
 *   reads      each read under load (autocannon) vs bare Fastify sending the same bytes after the same
 *              number of raw queries; a deep board page vs the first
 *   mirror     a delta walk of every project over HTTP vs one raw SELECT of the same rows
 *   memory     the server's RSS after the read load
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import pg from 'pg';
import { buildApp } from '../api/app.ts';
import { parseConfig, type Config } from '../config/config.ts';
import { projectors } from '../projectors/registry.ts';
import { createProjectionRunner } from '../projectors/runner.ts';
import { defaultCalls } from '../ingest/generate/context.ts';
import { generateLines } from '../ingest/generate/generate.ts';
import { DEFAULT_INGEST_BATCH } from '../ingest/ndjson.ts';
import { createIngestor } from '../ingest/pipeline.ts';
import { issueKey } from '../service/access.ts';
import { createRateLimiter } from '../service/rate/create.ts';
import { replayReadModels } from '../service/replay.ts';
import { createServices } from '../service/services.ts';
import { openGenerationSpace, openStores, projectionLimits } from '../service/stores.ts';
import type { StreamAppend } from '../eventstore/port.ts';
import { BENCH_SEED, dataSetSpec } from './dataset.ts';
import { median } from './median.ts';

type LoadResult = { requests: { average: number; total: number }; non2xx: number; errors: number };
const autocannon = createRequire(import.meta.url)('autocannon') as (options: object) => Promise<LoadResult>;

const SERVER = process.env.PULSEBOARD_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ROUNDS = Number(process.env.BENCH_PG_ROUNDS ?? 3);
const LOAD_SECONDS = Number(process.env.BENCH_PG_LOAD_SECONDS ?? 3);
const CONNECTIONS = 10;
const EVENTS_TABLE = 'pulseboard_events';

const urlOf = (database: string) => {
  const url = new URL(SERVER);
  url.pathname = `/${database}`;
  return url.toString();
};
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const out = (line: string) => process.stdout.write(`${line}\n`);

function configFor(url: string): Config {
  const parsed = parseConfig({
    POSTGRES_URL: url,
    PULSEBOARD_RATE_LIMIT: '1000000000',
    PULSEBOARD_LOG_LEVEL: 'silent',
  });
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.config;
}

async function admin<T>(work: (client: pg.Client) => Promise<T>, url = SERVER): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** The data set's database, built through the public path (generate → ingest → catch up) when missing. */
async function ensureDatabase(projects: number, rebuild: boolean): Promise<string> {
  const database = `pulseboard_bench_${projects}`;
  const exists = await admin(
    async (c) => (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [database])).rowCount === 1,
  );
  const complete =
    exists &&
    (await admin(
      async (c) => (await c.query(`SELECT to_regclass('bench_complete') IS NOT NULL AS done`)).rows[0].done as boolean,
      urlOf(database),
    ));
  if (complete && !rebuild) return database;
  await admin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${database}`);
  });
  const config = configFor(urlOf(database));
  const stores = await openStores(config);
  const started = performance.now();
  try {
    const ingestor = createIngestor(stores.log, { followerProvider: config.PULSEBOARD_FOLLOWER_PROVIDER });
    const spec = dataSetSpec(projects);
    let batch: string[] = [];
    for (const line of generateLines({
      ...spec,
      seed: BENCH_SEED,
      calls: spec.calls || defaultCalls(projects),
      hotContractCalls: 0,
      followerProvider: config.PULSEBOARD_FOLLOWER_PROVIDER,
    })) {
      batch.push(line);
      if (batch.length === DEFAULT_INGEST_BATCH) {
        await ingestor.ingestBatch(batch, 'ndjson');
        batch = [];
      }
    }
    if (batch.length > 0) await ingestor.ingestBatch(batch, 'ndjson');
    out(`  ${projects}: ingested in ${seconds(performance.now() - started)}; catching up`);
    await stores.catchUp();
    await issueKey(stores, 'bench');
    await stores.catchUp();
  } finally {
    await stores.close();
  }
  await admin((c) => c.query('CREATE TABLE bench_complete ()'), urlOf(database));
  out(`  ${projects}: data set built in ${seconds(performance.now() - started)}`);
  return database;
}

/** A raw read of the whole log through pg, its JSON parsed as any reader of it must. */
async function rawLogRead(url: string): Promise<{ ms: number; events: number }> {
  return admin(async (c) => {
    const started = performance.now();
    let events = 0;
    for (let after = 0; ;) {
      const { rows } = await c.query(
        `SELECT position, id, stream, revision, type, data, metadata, recorded_at FROM ${EVENTS_TABLE}
         WHERE position > $1 ORDER BY position LIMIT 10000`,
        [after],
      );
      if (rows.length === 0) break;
      for (const row of rows) {
        JSON.parse(row.data as string);
        JSON.parse(row.metadata as string);
      }
      events += rows.length;
      after = Number(rows[rows.length - 1].position);
    }
    return { ms: performance.now() - started, events };
  }, url);
}

/** Every row of a generation's tables inserted again into copies of them (indexes included), 1,000 a statement. */
async function rawModelInserts(url: string, schema: string): Promise<{ ms: number; rows: number }> {
  return admin(async (c) => {
    const tables = (
      await c.query(`SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename`, [schema])
    ).rows.map((r) => r.tablename as string);
    await c.query('DROP SCHEMA IF EXISTS bench_raw CASCADE');
    await c.query('CREATE SCHEMA bench_raw');
    let ms = 0;
    let total = 0;
    for (const table of tables) {
      await c.query(`CREATE TABLE bench_raw."${table}" (LIKE "${schema}"."${table}" INCLUDING ALL)`);
      const { rows, fields } = await c.query({ text: `SELECT * FROM "${schema}"."${table}"`, rowMode: 'array' });
      const columns = fields.map((f) => `"${f.name}"`).join(', ');
      const started = performance.now();
      for (let i = 0; i < rows.length; i += 1000) {
        const part = rows.slice(i, i + 1000) as unknown[][];
        const values = part
          .map((row, r) => `(${row.map((_, k) => `$${r * row.length + k + 1}`).join(', ')})`)
          .join(', ');
        await c.query(`INSERT INTO bench_raw."${table}" (${columns}) VALUES ${values}`, part.flat());
      }
      ms += performance.now() - started;
      total += rows.length;
    }
    await c.query('DROP SCHEMA bench_raw CASCADE');
    return { ms, rows: total };
  }, url);
}

/** The service's appends of `groups` into a fresh log vs raw multi-row INSERTs of the same rows. */
async function appendRatio(database: string): Promise<string> {
  const scratch = `${database}_append`;
  await admin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${scratch} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${scratch}`);
  });
  try {
    const source = await openStores(configFor(urlOf(database)));
    const events = await source.log.readAll({ afterPosition: 0, limit: 100_000 });
    await source.close();
    // Batches as ingest makes them: consecutive events, grouped by stream within the batch.
    const batches: StreamAppend[][] = [];
    const rawBatches: unknown[][][] = [];
    for (let i = 0; i < events.length; i += DEFAULT_INGEST_BATCH) {
      rawBatches.push(
        events
          .slice(i, i + DEFAULT_INGEST_BATCH)
          .map((e) => [
            e.position,
            e.id,
            e.stream,
            e.revision,
            e.type,
            JSON.stringify(e.data),
            JSON.stringify(e.metadata),
            new Date(),
          ]),
      );
      const byStream = new Map<string, StreamAppend>();
      for (const e of events.slice(i, i + DEFAULT_INGEST_BATCH)) {
        const group = byStream.get(e.stream) ?? { stream: e.stream, events: [] };
        (group.events as { id: string; type: string; data: unknown; metadata: object }[]).push({
          id: e.id,
          type: e.type,
          data: e.data,
          metadata: e.metadata,
        });
        byStream.set(e.stream, group);
      }
      batches.push([...byStream.values()]);
    }
    const stores = await openStores(configFor(urlOf(scratch)));
    let started = performance.now();
    for (const batch of batches) await stores.log.appendBatch(batch);
    const serviceMs = performance.now() - started;
    await stores.close();
    const rawMs = await admin(async (c) => {
      await c.query(`CREATE TABLE raw_events (LIKE ${EVENTS_TABLE} INCLUDING ALL)`);
      started = performance.now();
      for (const rows of rawBatches) {
        // 5,000 rows a statement, as the adapter's own INSERT (a statement takes at most 65,535 parameters).
        for (let i = 0; i < rows.length; i += 5000) {
          const part = rows.slice(i, i + 5000);
          const values = part.map((row, r) => `(${row.map((_, k) => `$${r * row.length + k + 1}`).join(', ')})`);
          await c.query(
            `INSERT INTO raw_events (position, id, stream, revision, type, data, metadata, recorded_at) VALUES ${values.join(', ')}`,
            part.flat(),
          );
        }
      }
      return performance.now() - started;
    }, urlOf(scratch));
    return `append: ${events.length} events in ${batches.length} batches: ${seconds(serviceMs)}; raw multi-row INSERT ${seconds(rawMs)}: ${(rawMs / serviceMs).toFixed(2)} of raw (goal >= 0.5)`;
  } finally {
    await admin((c) => c.query(`DROP DATABASE IF EXISTS ${scratch} WITH (FORCE)`));
  }
}

/** A catch-up from zero with the live limits into a spare generation, and a replay, against the raw baseline. */
async function writeRatios(database: string): Promise<string[]> {
  const url = urlOf(database);
  const config = configFor(url);
  const lines: string[] = [];
  const raw = await rawLogRead(url);
  const space = await openGenerationSpace(config);
  const stores = await openStores(config);
  try {
    const spare = Math.max(...(await space.list()), 0) + 100;
    const store = space.open(spare);
    let started = performance.now();
    await createProjectionRunner(stores.log, store, projectors, projectionLimits(config, 'live')).catchUp();
    const catchUpMs = performance.now() - started;
    await store.close();
    const inserts = await rawModelInserts(url, `pulseboard_g${spare}`);
    await space.remove(spare);
    const base = raw.ms + inserts.ms;
    lines.push(
      `catch-up: ${seconds(catchUpMs)}; raw baseline: read of the log (${raw.events} events) ${seconds(raw.ms)} + inserts of the ${inserts.rows} rows ${seconds(inserts.ms)} = ${seconds(base)}: ${(catchUpMs / base).toFixed(2)}x (goal <= 2.5)`,
    );
    started = performance.now();
    const replayed = await replayReadModels({
      space,
      log: stores.log,
      projectors,
      releaseTimeoutMs: 5_000,
      ...projectionLimits(config, 'replay'),
    });
    const replayMs = performance.now() - started;
    if (!replayed.ok) throw new Error(replayed.reason);
    lines.push(`replay: ${seconds(replayMs)}: ${(replayMs / base).toFixed(2)}x the same raw baseline (goal <= 2.5)`);
  } finally {
    await stores.close();
    await space.close();
  }
  return lines;
}

type ServerChild = { child: ChildProcess; port: number; request(message: object): Promise<Record<string, unknown>> };

async function startChild(args: string[]): Promise<ServerChild> {
  const child = fork(import.meta.filename, args, {
    execArgv: ['--disable-warning=ExperimentalWarning', '--max-semi-space-size=8', '--heap-growing-percent=50'],
    env: { ...process.env, MALLOC_ARENA_MAX: '2' },
  });
  const replies: ((value: Record<string, unknown>) => void)[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bench server exited (${code})`)));
    child.on('message', (message: Record<string, unknown>) => {
      if (typeof message['listening'] === 'number') resolve(message['listening']);
      else replies.shift()?.(message);
    });
  });
  return {
    child,
    port,
    request: (message) =>
      new Promise((resolve) => {
        replies.push(resolve);
        child.send(message);
      }),
  };
}

/** Child: the service over the data set; counts the queries a request makes, reports its memory. */
async function serveApp(url: string): Promise<void> {
  let queries = 0;
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
    queries += 1;
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  const config = configFor(url);
  const stores = await openStores(config);
  const app = buildApp(createServices({ config, stores, limiter: await createRateLimiter(config) }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  process.on('message', (message: { count?: { path: string; key: string }; memory?: true }) => {
    if (message.count) {
      const { path, key } = message.count;
      void (async () => {
        const headers = { authorization: `Bearer ${key}` };
        await app.inject({ url: path, headers });
        const before = queries;
        const res = await app.inject({ url: path, headers });
        process.send!({
          queries: queries - before,
          status: res.statusCode,
          body: res.body,
          type: res.headers['content-type'],
        });
      })();
    }
    if (message.memory) process.send!({ rss: process.memoryUsage().rss });
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
  process.on('message', (message: { record?: { path: string; queries: number; body: string; type: string } }) => {
    if (message.record) {
      const { path, queries, body, type } = message.record;
      recorded.set(path, { queries, body: Buffer.from(body), type });
      process.send!({ ok: true });
    }
  });
  process.send!({ listening: (server.server.address() as { port: number }).port });
}

async function readRatios(database: string): Promise<string[]> {
  const url = urlOf(database);
  const stores = await openStores(configFor(url));
  const { key } = await issueKey(stores, 'bench-reads');
  await stores.catchUp();
  const board = (await stores.store.list('projects', { facets: ['visible'], offset: 0, limit: 1 })).docs[0] ?? null;
  await stores.close();
  const app = await startChild(['--serve-app', url]);
  const bare = await startChild(['--serve-bare', url]);
  const headers = { authorization: `Bearer ${key}` };
  const lines: string[] = [];
  try {
    const first = (await (await fetch(`http://127.0.0.1:${app.port}/v1/projects`, { headers })).json()) as {
      totalPages: number;
      projects: { id: string; handle: string }[];
    };
    const sample = first.projects[0] ?? (board?.doc as { id: string; handle: string });
    const paths: Record<string, string> = {
      'board page': '/v1/projects',
      'deep board page': `/v1/projects?page=${first.totalPages}`,
      'delta page': '/v1/projects?since=1970-01-01T00:00:00Z&limit=100',
      'call page': '/v1/calltracker/calls',
      'one project': `/v1/projects/${encodeURIComponent(sample.handle)}`,
      search: `/v1/search?q=${encodeURIComponent(sample.id)}`,
    };
    const queries: Record<string, number> = {};
    for (const [name, path] of Object.entries(paths)) {
      const counted = await app.request({ count: { path, key } });
      queries[name] = Number(counted['queries']);
      if (counted['status'] !== 200) throw new Error(`${path}: ${String(counted['status'])}`);
      await bare.request({
        record: { path, queries: counted['queries'], body: counted['body'], type: counted['type'] },
      });
    }
    const rps: Record<string, number[]> = {};
    const bareRps: Record<string, number[]> = {};
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, path] of Object.entries(paths)) {
        const load = async (port: number) => {
          const result = await autocannon({
            url: `http://127.0.0.1:${port}${path}`,
            connections: CONNECTIONS,
            duration: LOAD_SECONDS,
            headers,
          });
          if (result.non2xx > 0 || result.errors > 0) throw new Error(`${path}: failures under load`);
          return result.requests.average;
        };
        (rps[name] ??= []).push(await load(app.port));
        (bareRps[name] ??= []).push(await load(bare.port));
      }
    }
    const goals: Record<string, number> = {
      'board page': 0.8,
      'deep board page': 0.8,
      'delta page': 0.8,
      'call page': 0.8,
      'one project': 0.5,
      search: 0.5,
    };
    for (const name of Object.keys(paths)) {
      const ratio = median(rps[name]!.map((r, i) => r / bareRps[name]![i]!));
      lines.push(
        `${name}: ${Math.round(median(rps[name]!))} req/s, bare Fastify after the same ${queries[name]} queries ${Math.round(median(bareRps[name]!))} req/s: ${ratio.toFixed(2)} (goal >= ${goals[name]})`,
      );
    }
    const deep = median(rps['board page']!) / median(rps['deep board page']!);
    lines.push(`deep board page: ${deep.toFixed(2)}x the first page's time (goal <= 1.3)`);

    // The mirror: every project by delta pages over HTTP, against one raw SELECT of the same rows.
    let started = performance.now();
    let rows = 0;
    for (let path = '/v1/projects?since=1970-01-01T00:00:00Z&limit=100'; ;) {
      const page = (await (await fetch(`http://127.0.0.1:${app.port}${path}`, { headers })).json()) as {
        projects: unknown[];
        cursor: string;
      };
      if (page.projects.length === 0) break;
      rows += page.projects.length;
      path = `/v1/projects?cursor=${page.cursor}&limit=100`;
    }
    const walkMs = performance.now() - started;
    const live = await admin(async (c) => {
      const pointer = await c.query(`SELECT to_regclass('pulseboard.pointer') IS NOT NULL AS has`);
      return pointer.rows[0].has
        ? `pulseboard_g${(await c.query('SELECT generation FROM pulseboard.pointer')).rows[0]?.generation ?? 0}`
        : 'pulseboard_g0';
    }, url).catch(() => 'pulseboard_g0');
    started = performance.now();
    const selected = await admin(
      async (c) =>
        (await c.query(`SELECT doc FROM "${live}".docs WHERE collection = 'projects' ORDER BY seq, id`)).rowCount,
      url,
    );
    const selectMs = performance.now() - started;
    lines.push(
      `delta mirror: ${rows} projects in ${seconds(walkMs)}; one raw SELECT of ${selected} rows ${seconds(selectMs)}: ${(selectMs / walkMs).toFixed(2)} (goal >= 0.3)`,
    );
    const memory = await app.request({ memory: true });
    lines.push(`server RSS after the read load: ${Math.round(Number(memory['rss']) / 1048576)} MB (goal <= 300 MB)`);
  } finally {
    app.child.kill('SIGTERM');
    bare.child.kill('SIGTERM');
  }
  return lines;
}

// Not strict: `npm run bench` hands every bench the same arguments.
const { values } = parseArgs({
  strict: false,
  options: {
    projects: { type: 'string' },
    parts: { type: 'string' },
    rebuild: { type: 'boolean' },
    'serve-app': { type: 'string' },
    'serve-bare': { type: 'string' },
  },
});
if (typeof values['serve-app'] === 'string') await serveApp(values['serve-app']);
else if (typeof values['serve-bare'] === 'string') await serveBare(values['serve-bare']);
else {
  const sizes = String(values.projects ?? '10000')
    .split(',')
    .map(Number);
  const parts = new Set(String(values.parts ?? 'append,writes,reads').split(','));
  for (const projects of sizes) {
    out(`PostgreSQL, ${projects} projects`);
    const database = await ensureDatabase(projects, values.rebuild === true);
    if (parts.has('append')) out(`  ${await appendRatio(database)}`);
    if (parts.has('writes')) for (const line of await writeRatios(database)) out(`  ${line}`);
    if (parts.has('reads')) for (const line of await readRatios(database)) out(`  ${line}`);
  }
}
