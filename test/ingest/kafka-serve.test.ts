/**
 * `pulseboard serve` when a server it needs is down at start (closed loopback ports stand for them):
 * an ingest-only process, or one whose stores cannot be reached, exits 1 by itself (within 30 s of
 * loading) with one line naming the server, whatever clients it had opened (a Redis client's reconnect timer included);
 * with the API in the process a Kafka outage only delays ingest, and /readyz says so.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it } from 'vitest';
import { START_DEADLINE_MS } from '../../bin/commands/serve.ts';
import { runCli, startServe, stopChild } from '../support/cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'pb-serve-down-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** The lines a person reads (structured log lines aside). */
const plainLines = (stderr: string) => stderr.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('{'));

/**
 * Seconds from spawn to exit, less what loading the command takes on this machine now (`serve --help`
 * loads the same modules): on a loaded machine loading alone can take tens of seconds, while the
 * bound under test is serve's own (START_DEADLINE_MS, then a forced exit 3 s after closing began).
 */
async function startFailure(args: string[], env: Record<string, string>) {
  const timed = async (argv: string[]) => {
    const started = Date.now();
    const run = await runCli(argv, { env: { PORT: '0', PULSEBOARD_LOG_LEVEL: 'silent', ...env } });
    return { ...run, seconds: (Date.now() - started) / 1000 };
  };
  const [run, loading] = await Promise.all([timed(args), timed(['serve', '--help'])]);
  return { ...run, seconds: Math.max(0, run.seconds - loading.seconds) };
}

/** serve's own part of a failed start stays well inside 30 s. */
const BOUND_S = START_DEADLINE_MS / 1000 + 10;

describe.concurrent('serve with a server down at start', () => {
  it('--role ingest with Kafka down (and a Redis client open): exit 1 within 30 s, one line naming Kafka', async () => {
    const [kafka, redis] = [await closedPort(), await closedPort()];
    const result = await startFailure(['serve', '--role', 'ingest'], {
      PULSEBOARD_DATA_DIR: join(dir, 'ingest'),
      KAFKA_BROKERS: `127.0.0.1:${kafka}`,
      REDIS_URL: `redis://127.0.0.1:${redis}`,
    });
    assert.equal(result.code, 1, result.stderr);
    assert.ok(result.seconds < BOUND_S, `exited ${result.seconds} s after loading`);
    assert.deepEqual(plainLines(result.stderr).length, 1, result.stderr);
    assert.match(
      plainLines(result.stderr)[0]!,
      new RegExp(`^pulseboard serve: cannot reach Kafka at 127\\.0\\.0\\.1:${kafka}`),
    );
  });

  it('an unreachable MongoDB read store: exit 1 within 30 s, one line naming it without its credentials', async () => {
    const port = await closedPort();
    const result = await startFailure(['serve', '--role', 'api'], {
      PULSEBOARD_DATA_DIR: join(dir, 'mongo'),
      MONGODB_URL: `mongodb://reader:s3cret@127.0.0.1:${port}/pb`,
    });
    assert.equal(result.code, 1, result.stderr);
    assert.ok(result.seconds < BOUND_S, `exited ${result.seconds} s after loading`);
    assert.deepEqual(plainLines(result.stderr), [plainLines(result.stderr)[0]]);
    assert.match(
      result.stderr,
      new RegExp(`^pulseboard serve: cannot open the read store \\(MongoDB at mongodb://127\\.0\\.0\\.1:${port}/pb\\)`),
    );
    assert.doesNotMatch(result.stderr, /s3cret/);
  });

  it('an unreachable KurrentDB event log: exit 1 within 30 s, one line naming it', async () => {
    const port = await closedPort();
    const result = await startFailure(['serve', '--role', 'projectors'], {
      PULSEBOARD_DATA_DIR: join(dir, 'kurrent'),
      EVENTSTORE_URL: `kurrentdb://127.0.0.1:${port}?tls=false`,
    });
    assert.equal(result.code, 1, result.stderr);
    assert.ok(result.seconds < BOUND_S, `exited ${result.seconds} s after loading`);
    assert.equal(plainLines(result.stderr).length, 1, result.stderr);
    assert.match(
      result.stderr,
      new RegExp(`^pulseboard serve: cannot reach the event log \\(KurrentDB at kurrentdb://127\\.0\\.0\\.1:${port}`),
    );
  });

  it('an unreachable PostgreSQL: exit 1 within 30 s, one line naming it without its password', async () => {
    const port = await closedPort();
    const result = await startFailure(['serve', '--role', 'projectors'], {
      PULSEBOARD_DATA_DIR: join(dir, 'postgres'),
      POSTGRES_URL: `postgres://pulse:s3cret@127.0.0.1:${port}/pb?password=s3cret`,
    });
    assert.equal(result.code, 1, result.stderr);
    assert.ok(result.seconds < BOUND_S, `exited ${result.seconds} s after loading`);
    assert.equal(plainLines(result.stderr).length, 1, result.stderr);
    // Whichever store is asked first (the read store too lives there) is named.
    assert.match(
      result.stderr,
      new RegExp(
        `^pulseboard serve: cannot (reach the event log|open the read store) \\(PostgreSQL at 127\\.0\\.0\\.1:${port}/pb\\): .*ECONNREFUSED`,
      ),
    );
    assert.doesNotMatch(result.stderr, /s3cret/);
  });

  it('--role all with Kafka down listens, retries ingest in the background, and /readyz says degraded', async () => {
    const kafka = await closedPort();
    const served = await startServe({ PULSEBOARD_DATA_DIR: join(dir, 'all'), KAFKA_BROKERS: `127.0.0.1:${kafka}` });
    try {
      assert.ok(served.url, 'it listens');
      const response = await fetch(`${served.url}/readyz`);
      assert.equal(response.status, 200);
      const body = (await response.json()) as { status: string; background: Record<string, { state: string }> };
      assert.equal(body.status, 'degraded');
      assert.equal(body.background['kafka-ingest']?.state, 'retrying');
      const projects = await fetch(`${served.url}/v1/projects`);
      assert.equal(projects.status, 401, 'the API answers (a key is required)');
    } finally {
      assert.equal(await stopChild(served.child, 'SIGTERM'), 0);
    }
  });
});
