/**
 * The servers the read bench loads, each in a process of its own so the load generator never shares
 * its event loop:
 *   app DATA_DIR        the real service over a cached data directory
 *   bare BODIES_FILE    bare Fastify answering each URL with the bytes the real service sent for it
 *                       (parsing a JSON request body first, as Fastify does before any handler)
 * Prints `listening <port>` once ready; stops on SIGTERM.
 */
import { readFileSync } from 'node:fs';
import { getHeapSpaceStatistics, getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import Fastify from 'fastify';
import { buildApp } from '../api/app.ts';
import { createRateLimiter } from '../service/rate/create.ts';
import { createServices } from '../service/services.ts';
import { openStores } from '../service/stores.ts';
import { benchConfig } from './dataset.ts';

/** A response the service sent, to be sent again by bare Fastify; `headers` when the baseline repeats its headers too. */
export type RecordedBody = {
  method: 'GET' | 'POST';
  url: string;
  contentType: string;
  body: string;
  headers?: Record<string, string>;
};

async function app(dataDir: string) {
  const config = benchConfig(dataDir);
  const stores = await openStores(config);
  const limiter = await createRateLimiter(config);
  const server = buildApp(createServices({ config, stores, limiter }));
  return {
    server,
    async close() {
      await server.close();
      await limiter.close();
      await stores.close();
    },
  };
}

/** A JSON array of recorded bodies, or (`.ndjson`) one a line: more than one JS string holds at 1M. */
function recordedBodies(file: string): RecordedBody[] {
  if (!file.endsWith('.ndjson')) return JSON.parse(readFileSync(file, 'utf8')) as RecordedBody[];
  const data = readFileSync(file);
  const out: RecordedBody[] = [];
  for (let at = 0; at < data.length;) {
    const end = data.indexOf(10, at);
    const stop = end === -1 ? data.length : end;
    if (stop > at) out.push(JSON.parse(data.toString('utf8', at, stop)) as RecordedBody);
    at = stop + 1;
  }
  return out;
}

function bare(bodiesFile: string) {
  // Sent as bytes: a text with one character past Latin-1 would be encoded again on every send, which the service does not do.
  const bodies = new Map(
    recordedBodies(bodiesFile).map((b) => [`${b.method} ${b.url}`, { ...b, bytes: Buffer.from(b.body, 'utf8') }]),
  );
  const server = Fastify({ logger: false });
  server.route({
    method: ['GET', 'POST'],
    url: '*',
    handler: async (request, reply) => {
      const recorded = bodies.get(`${request.method} ${request.url}`);
      if (!recorded) return reply.code(404).send();
      if (recorded.headers) reply.headers(recorded.headers);
      return reply.type(recorded.contentType).send(recorded.bytes);
    },
  });
  return { server, close: () => server.close() };
}

const [mode, target] = process.argv.slice(2);
if ((mode !== 'app' && mode !== 'bare') || !target) {
  process.stderr.write('usage: reads-server.ts app DATA_DIR | bare BODIES_FILE\n');
  process.exit(2);
}
const running = mode === 'app' ? await app(target) : bare(target);
const address = await running.server.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`listening ${new URL(address).port}\n`);
// SIGUSR2: one line with where the process's memory is (V8 heap, memory outside it), for the bench.
process.on('SIGUSR2', () => {
  const m = process.memoryUsage();
  const mb = (n: number) => Math.round(n / 1048576);
  // The young generation (semi-spaces, sized by --max-semi-space-size) apart from the old one.
  const young = getHeapSpaceStatistics().find((space) => space.space_name === 'new_space');
  const heap = getHeapStatistics();
  // Then a full collection, after the figures above (the bench reads RSS before it asks): how much of the
  // heap was garbage not yet collected, and how much was live.
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  const collected = process.memoryUsage();
  process.stdout.write(
    `memory heapUsed=${mb(m.heapUsed)} heapTotal=${mb(m.heapTotal)} newSpace=${mb(young?.space_size ?? 0)} heapLimit=${mb(heap.heap_size_limit)} external=${mb(m.external)} arrayBuffers=${mb(m.arrayBuffers)} rss=${mb(m.rss)} MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX ?? 'unset'} PULSEBOARD_SQLITE_MAP_MB=${process.env.PULSEBOARD_SQLITE_MAP_MB ?? 'unset'}` +
      ` (after a full collection: heapUsed=${mb(collected.heapUsed)} heapTotal=${mb(collected.heapTotal)} external=${mb(collected.external)} rss=${mb(collected.rss)})\n`,
  );
});
const stop = () => void running.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
// The bench holds the other end of stdin: when it ends (the bench exited, or was killed before it
// could stop this server), so does this server, and no orphan keeps loading the machine.
process.stdin.on('end', stop).resume();
