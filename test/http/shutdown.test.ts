import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'vitest';

const BIN = join(import.meta.dirname, '../../bin/pulseboard.ts');

describe('pulseboard serve: metrics on their own port, request ids in logs, and a graceful stop that says what it waited for', () => {
  it('serves /metrics only on PULSEBOARD_METRICS_PORT and logs each shutdown step with its duration', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pulseboard-shutdown-'));
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', BIN, 'serve'], {
      env: {
        ...process.env,
        PULSEBOARD_DATA_DIR: dir,
        PORT: '0',
        PULSEBOARD_METRICS_PORT: '0',
        PULSEBOARD_LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const lines: string[] = [];
      let url = '';
      let metricsUrl = '';
      let key = '';
      const reading = (async () => {
        for await (const line of createInterface({ input: child.stdout! })) lines.push(line);
      })();
      while (!(url && metricsUrl && key)) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        for (const line of lines) {
          url ||= /listening on (http:\/\/\S+)\/v1/.exec(line)?.[1] ?? '';
          metricsUrl ||= /^metrics on (http:\/\/\S+)$/.exec(line)?.[1] ?? '';
          if (/^pbk_[A-Za-z0-9_-]{43}$/.test(line)) key = line;
        }
        assert.equal(child.exitCode, null, 'serve is running');
      }

      const read = await fetch(`${url}/v1/projects`, {
        headers: { authorization: `Bearer ${key}`, 'x-request-id': 'shutdown-test-1' },
      });
      assert.equal(read.status, 200);
      assert.equal(read.headers.get('x-request-id'), 'shutdown-test-1');
      assert.equal((await fetch(`${url}/metrics`)).status, 404, 'not on the API port');
      const elsewhere = await fetch(metricsUrl.replace(/\/metrics$/, '/v1/projects'));
      assert.equal(elsewhere.status, 404);
      assert.equal(((await elsewhere.json()) as { error: { code: string } }).error.code, 'not_found');
      const scraped = await fetch(metricsUrl);
      assert.equal(scraped.status, 200);
      assert.match(await scraped.text(), /pulseboard_http_requests_total\{operation="listProjects",status="200"\} 1/);

      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
      await reading;

      const json = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
      const access = json.find((l) => l.msg === 'request completed' && l.reqId === 'shutdown-test-1');
      assert.ok(access, 'the access line carries the request id');
      assert.match(access.keyId, /^[0-9a-f]{24}$/);
      assert.ok(!lines.some((l) => l.startsWith('{') && l.includes(key)), 'no log line holds the key');
      const steps = json.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('shutdown:'));
      assert.deepEqual(
        steps.map((l) => l.msg),
        [
          'shutdown: stopping; no new connections',
          'shutdown: open requests answered, HTTP server closed',
          'shutdown: projector batch and background loops finished',
          'shutdown: stores closed; exiting',
        ],
      );
      assert.equal(steps[0].signal, 'SIGTERM');
      assert.equal(typeof steps[0].openRequests, 'number');
      assert.ok(steps[0].backgroundLoops.includes('projectors'));
      for (const step of steps.slice(1)) assert.ok(Number.isInteger(step.waitedMs) && step.waitedMs >= 0, step.msg);
      assert.ok(Number.isInteger(steps[3].totalMs));
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
