/**
 * A bench server as a program (bench/servers.ts): `app DATA_DIR` the service over a data directory,
 * `bare BODIES_FILE` bare Fastify sending for each URL the bytes the service sent. Prints `listening
 * <port>`, a `memory …` line on SIGUSR2; stops on SIGTERM or when its stdin (the bench's) ends.
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

/** The service over a data directory in this process, configured for benches (no rate limit, no log). */
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

function bare(bodiesFile: string) {
  // One body a line; sent as bytes: a text with one character past Latin-1 would be encoded again on every send, which the service does not do.
  const bodies = new Map<string, { contentType: string; bytes: Buffer }>();
  const data = readFileSync(bodiesFile);
  for (let at = 0, end = 0; at < data.length; at = end + 1) {
    end = data.indexOf(10, at); // startBare ends every body's line
    const recorded = JSON.parse(data.toString('utf8', at, end)) as RecordedBody;
    bodies.set(recorded.url, { contentType: recorded.contentType, bytes: Buffer.from(recorded.body, 'utf8') });
  }
  const server = Fastify({ logger: false });
  server.get('*', async (request, reply) => {
    const recorded = bodies.get(request.url);
    return recorded ? reply.type(recorded.contentType).send(recorded.bytes) : reply.code(404).send();
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
