import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { meteredIngestor } from '../../api/metrics.ts';
import { metricsFor } from '../../api/app.ts';
import { createIngestor } from '../../ingest/pipeline.ts';
import { example, line } from '../ingest/examples.ts';
import { connectClient, seedBoard } from '../mcp/support.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/** The value of one sample line (`name{labels} value`), or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = (match[2] ?? '').split(',').filter(Boolean);
    if (wanted.every((w) => present.includes(w))) return Number(match[3]);
  }
  return undefined;
}

describe('/metrics', () => {
  let h: Harness;
  let key: string;

  beforeAll(async () => {
    h = await createHarness({ env: { PULSEBOARD_RATE_LIMIT: '5' } });
    await seedBoard(h);
    key = await h.key('member', ['allow', 'link']);
  });
  afterAll(() => h.close());

  it('counts requests by operation and status, MCP by tool, rate decisions, and reads projector and log state at scrape time', async () => {
    const auth = { authorization: `Bearer ${key}` };
    const first = await h.app.inject({ method: 'GET', url: '/v1/projects', headers: auth });
    await h.app.inject({
      method: 'GET',
      url: '/v1/projects',
      headers: { ...auth, 'if-none-match': String(first.headers.etag) },
    });
    await h.app.inject({ method: 'GET', url: '/v1/projects/h1', headers: auth });
    await h.app.inject({ method: 'GET', url: '/v1/projects', headers: { authorization: 'Bearer wrong' } });
    await h.app.inject({ method: 'GET', url: '/no/such/thing' });
    const base = await h.app.listen({ host: '127.0.0.1', port: 0 });
    const client = await connectClient(base, key);
    await client.callTool({ name: 'get_project', arguments: { handle: 'h2' } });
    await client.close();
    // Budget of 5: three REST reads and one tool call spent four; the next two are allowed then limited.
    await h.app.inject({ method: 'GET', url: '/v1/pulse', headers: auth });
    const limited = await h.app.inject({ method: 'GET', url: '/v1/pulse', headers: auth });
    assert.equal(limited.statusCode, 429);

    // One projector batch: a new sighting and two thesis jobs (one queued, one started) appended and folded.
    await h.append('project.sighted', 's-new', 'project-pnew', {
      projectId: 'pnew',
      at: '2026-11-05T00:00:00.000Z',
      handle: 'fresh',
      fol: 1,
      name: 'Fresh',
    });
    const contracts = ['0x' + 'a'.repeat(40), '0x' + 'b'.repeat(40)];
    const jobs = ['5b0c3f0e-8a52-4a56-9a4b-0d3f6c1e2a01', '5b0c3f0e-8a52-4a56-9a4b-0d3f6c1e2a02'];
    for (const [i, contract] of contracts.entries()) {
      await h.append('thesis.requested', `t-req-${i}`, `thesis-${contract}`, {
        contract,
        requestId: jobs[i],
        owner: 'member',
        day: '2026-11-05',
        at: '2026-11-05T00:00:00.000Z',
      });
    }
    await h.append('thesis.started', 't-start-1', `thesis-${contracts[1]}`, {
      contract: contracts[1],
      requestId: jobs[1],
      at: '2026-11-05T00:00:01.000Z',
    });
    await h.stores.catchUp();
    const head = await h.stores.log.headPosition();

    const res = await h.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    const text = res.body;
    assert.equal(sample(text, 'pulseboard_http_requests_total', { operation: 'listProjects', status: '200' }), 1);
    assert.equal(sample(text, 'pulseboard_http_requests_total', { operation: 'listProjects', status: '304' }), 1);
    assert.equal(sample(text, 'pulseboard_http_requests_total', { operation: 'listProjects', status: '401' }), 1);
    assert.equal(sample(text, 'pulseboard_http_requests_total', { operation: 'getProject', status: '200' }), 1);
    assert.equal(sample(text, 'pulseboard_http_requests_total', { operation: 'unmatched', status: '404' }), 1);
    assert.equal(sample(text, 'pulseboard_http_requests_total', { operation: 'mcp:get_project', status: '200' }), 1);
    assert.equal(sample(text, 'pulseboard_http_requests_total', { operation: 'mcp:initialize', status: '200' }), 1);
    assert.equal(sample(text, 'pulseboard_http_requests_total', { operation: 'listPulse', status: '429' }), 1);
    assert.equal(sample(text, 'pulseboard_http_request_duration_seconds_count', { operation: 'listProjects' }), 3);
    // The histogram's buckets are cumulative, end at the count (+Inf), and the sum is the seconds taken.
    const bounds = ['0.001', '0.0025', '0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '+Inf'];
    const buckets = bounds.map((le) =>
      sample(text, 'pulseboard_http_request_duration_seconds_bucket', { le, operation: 'listProjects' }),
    );
    assert.ok(
      buckets.every((n, i) => n !== undefined && (i === 0 || n >= buckets[i - 1]!)),
      `cumulative buckets: ${buckets.join(' ')}`,
    );
    assert.equal(buckets.at(-1), 3);
    const seconds = sample(text, 'pulseboard_http_request_duration_seconds_sum', { operation: 'listProjects' }) ?? 0;
    assert.ok(seconds > 0 && seconds < 30, `sum ${seconds}`);
    assert.equal(
      sample(text, 'pulseboard_rate_limit_decisions_total', { decision: 'refused_unavailable' }),
      0,
      'every decision is exported, at 0 until counted',
    );
    assert.equal(sample(text, 'pulseboard_rate_limit_decisions_total', { decision: 'limited' }), 1);
    assert.ok((sample(text, 'pulseboard_rate_limit_decisions_total', { decision: 'allowed' }) ?? 0) >= 5);
    assert.equal(sample(text, 'pulseboard_rate_protection_up'), 1);
    assert.equal(sample(text, 'pulseboard_event_log_head'), head);
    assert.equal(sample(text, 'pulseboard_projector_checkpoint', { read_model: 'projects' }), head);
    assert.equal(sample(text, 'pulseboard_projector_lag_events', { read_model: 'projects' }), 0);
    assert.equal(
      sample(text, 'pulseboard_thesis_jobs', { state: 'open' }),
      0,
      'the ledger has no job opened by the feed',
    );
    assert.equal(sample(text, 'pulseboard_thesis_jobs', { state: 'queued' }), 1);
    assert.equal(sample(text, 'pulseboard_thesis_jobs', { state: 'running' }), 1);
    assert.equal(sample(text, 'pulseboard_thesis_jobs', { state: 'saved' }), 0);
    assert.equal(sample(text, 'pulseboard_thesis_jobs', { state: 'failed' }), 0);
    assert.equal(sample(text, 'pulseboard_ingest_messages_total', { outcome: 'accepted' }), 0);
    // Nothing about the caller: no key, no key id.
    assert.ok(!text.includes(key));
    assert.ok(!text.includes(key.slice(4, 20)));
    assert.ok(!/[0-9a-f]{24}/.test(text.replace(/^#.*$/gm, '')), 'no key id');
  });

  it('is unauthenticated and cheap to ask for (no budget spent)', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['ratelimit-limit'], undefined);
  });
});

describe('ingest metrics', () => {
  it('counts each message by outcome, single and batched, and passes outcomes through unchanged', async () => {
    const h = await createHarness();
    try {
      const metrics = metricsFor(h.services);
      const ingestor = meteredIngestor(createIngestor(h.stores.log, { followerProvider: 'followerscope' }), metrics);
      const good = line(example('project.sighted'));
      assert.equal((await ingestor.ingest(good, 'ndjson')).status, 'accepted');
      assert.equal((await ingestor.ingest(good, 'ndjson')).status, 'duplicate');
      const outcomes = await ingestor.ingestBatch(['{"type":"nope"}', 'not json'], 'ndjson');
      assert.deepEqual(
        outcomes.map((o) => o.status),
        ['rejected', 'rejected'],
      );
      const text = await metrics.render();
      assert.equal(sample(text, 'pulseboard_ingest_messages_total', { outcome: 'accepted' }), 1);
      assert.equal(sample(text, 'pulseboard_ingest_messages_total', { outcome: 'duplicate' }), 1);
      assert.equal(sample(text, 'pulseboard_ingest_messages_total', { outcome: 'rejected' }), 2);
    } finally {
      await h.close();
    }
  });
});

describe('/metrics configuration', () => {
  it('PULSEBOARD_METRICS=off removes the route', async () => {
    const h = await createHarness({ env: { PULSEBOARD_METRICS: 'off' } });
    try {
      const res = await h.app.inject({ method: 'GET', url: '/metrics' });
      assert.equal(res.statusCode, 404);
      assert.equal(res.json().error.code, 'not_found');
    } finally {
      await h.close();
    }
  });

  it('PULSEBOARD_METRICS_PORT takes it off the API port', async () => {
    const h = await createHarness({ env: { PULSEBOARD_METRICS_PORT: '0' } });
    try {
      assert.equal((await h.app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404);
    } finally {
      await h.close();
    }
  });
});
