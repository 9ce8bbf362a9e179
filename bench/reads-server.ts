/**
 * A bench server, run as a program by bench/servers.ts (and bench/instructions.ts), so it loads only
 * what a server does:
 *   app DATA_DIR        the real service over a cached data directory
 *   bare BODIES_FILE    bare Fastify answering each URL with the bytes the real service sent for it
 * Prints `listening <port>` once ready and one `memory …` line on SIGUSR2; stops on SIGTERM or when its
 * stdin (held by the bench) ends.
 */
import { readFileSync } from 'node:fs';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import Fastify from 'fastify';
import { buildApp } from '../api/app.ts';
import { createRateLimiter } from '../service/rate/create.ts';
import { createServices } from '../service/services.ts';
import { openStores } from '../service/stores.ts';
import { benchConfig } from './dataset.ts';
import type { RecordedBody } from './servers.ts';

/**
 * The service over a data directory, in this process, with the bench's configuration (no rate limit,
 * no log): for the benches that run the server themselves.
 */
export async function openBenchApp(dir: string) {
  const config = benchConfig(dir);
  const stores = await openStores(config);
  const limiter = await createRateLimiter(config);
  const services = createServices({ config, stores, limiter });
  const app = buildApp(services);
  return {
    app,
    stores,
    services,
    async close() {
      await app.close();
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
  return { app: server, close: () => server.close() };
}

async function serve(mode: string | undefined, target: string | undefined): Promise<void> {
  if ((mode !== 'app' && mode !== 'bare') || !target) {
    process.stderr.write('usage: reads-server.ts app DATA_DIR | bare BODIES_FILE\n');
    process.exit(2);
  }
  const running = mode === 'app' ? await openBenchApp(target) : bare(target);
  const address = await running.app.listen({ host: '127.0.0.1', port: 0 });
  process.stdout.write(`listening ${new URL(address).port}\n`);
  // SIGUSR2: where the process's memory is, then the same after a full collection (how much of the
  // heap was garbage not yet collected). The bench reads RSS from /proc before it asks.
  process.on('SIGUSR2', () => {
    const mb = (n: number) => Math.round(n / 1048576);
    const m = process.memoryUsage();
    setFlagsFromString('--expose-gc');
    (runInNewContext('gc') as () => void)();
    const after = process.memoryUsage();
    process.stdout.write(
      `memory heapUsed=${mb(m.heapUsed)} heapTotal=${mb(m.heapTotal)} heapLimit=${mb(getHeapStatistics().heap_size_limit)} external=${mb(m.external)} arrayBuffers=${mb(m.arrayBuffers)} rss=${mb(m.rss)}` +
        ` (after a full collection: heapUsed=${mb(after.heapUsed)} rss=${mb(after.rss)})\n`,
    );
  });
  const stop = () => void running.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  // The bench holds the other end of stdin: when it ends (the bench exited, or was killed before it
  // could stop this server), so does this server, and no orphan keeps loading the machine.
  process.stdin.on('end', stop).resume();
}

if (import.meta.main) await serve(process.argv[2], process.argv[3]);
