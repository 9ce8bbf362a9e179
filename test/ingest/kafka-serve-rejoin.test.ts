/**
 * `pulseboard serve --role ingest` restarted after a SIGKILL, on a real Kafka broker: the group still
 * holds the killed member until its session times out, longer than the start deadline. Reaching the
 * broker is what the deadline bounds; the process listens, says in /readyz that ingest is not yet
 * consuming, and consumes once the group lets it in.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'vitest';
import { START_DEADLINE_MS } from '../../bin/commands/serve.ts';
import { defaultGroupId } from '../../ingest/kafka/kafka-source.ts';
import { defaultSourceTopics, sourceTopics } from '../../ingest/kafka/topics.ts';
import { startServe, stopChild } from '../support/cli.ts';
import { produce, until, useKafkaBroker, voteMessages } from '../support/kafka-real.ts';
import { skipFor } from '../support/skip.ts';

const real = useKafkaBroker('rejoin');
const { skip, dir } = real;
const CHILD = join(import.meta.dirname, '..', 'support', 'kafka-ingest-child.ts');
/** The killed member's session: well past the start deadline, so the join outlasts it. */
const SESSION_MS = 40_000;

type Readiness = { status: string; background: Record<string, { state: string; failures: number }> };

async function readyz(url: string): Promise<Readiness> {
  return (await (await fetch(`${url}/readyz`)).json()) as Readiness;
}

describe('serve --role ingest restarted while its group still holds the killed member', () => {
  it(
    'listens once the broker answers, reports ingest retrying (degraded) while joining, and consumes once let in',
    { ...skipFor(skip), timeout: 300_000 },
    async () => {
      const broker = real.broker();
      await broker.createTopics(defaultSourceTopics.map((topic) => ({ topic, partitions: 1 })));
      const options = {
        brokers: broker.brokers,
        eventLog: join(dir, 'first.sqlite'),
        groupId: defaultGroupId,
        topics: defaultSourceTopics,
        sessionTimeoutMs: SESSION_MS,
      };
      const first = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', CHILD, JSON.stringify(options)], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let handled = 0;
      createInterface({ input: first.stdout }).on('line', (line) => {
        handled = (JSON.parse(line) as { handled?: number }).handled ?? handled;
      });
      try {
        // A message handled proves it holds the partition (a running status alone can precede the join).
        await produce(broker.brokers, sourceTopics.projects, voteMessages('rejoin', 1));
        await until('the first ingest process to consume', 120_000, async () => (handled > 0 ? true : undefined));
      } finally {
        first.kill('SIGKILL');
        await once(first, 'exit');
      }
      const killedAt = Date.now();

      const served = await startServe(
        { PULSEBOARD_DATA_DIR: join(dir, 'restarted'), KAFKA_BROKERS: broker.brokers.join(',') },
        { args: ['--role', 'ingest'] },
      );
      let code: number | null = null;
      try {
        assert.ok(served.url, `it listens (exit ${served.child.exitCode} after ${(Date.now() - killedAt) / 1000} s)`);
        const joining = await readyz(served.url);
        assert.equal(joining.background['kafka-ingest']?.state, 'retrying', JSON.stringify(joining));
        assert.equal(joining.status, 'degraded');
        await until('the restarted process in its group', 120_000, async () =>
          (await readyz(served.url)).background['kafka-ingest']?.state === 'running' ? true : undefined,
        );
        const waited = Date.now() - killedAt;
        assert.ok(waited > START_DEADLINE_MS, `the group held it past the start deadline (${waited} ms)`);
        assert.equal(served.child.exitCode, null, 'still serving');
        assert.equal((await readyz(served.url)).status, 'ready');
      } finally {
        code = await stopChild(served.child, 'SIGTERM');
      }
      assert.equal(code, 0, 'a clean stop');
    },
  );
});
