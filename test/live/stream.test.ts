import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { SAMPLE_FILE } from '../../bin/commands/serve.ts';
import { createIngestor } from '../../ingest/pipeline.ts';
import { createChangeStreams } from '../../service/changes.ts';
import { eventually } from '../replay/support.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { appendSightings, cursorPosition, openStream } from './support.ts';

/** Every row of the delta from the start, by REST pages: what the stream must send, in this order. */
async function deltaRows(h: Harness, key: string): Promise<{ id: string; json: string }[]> {
  const rows: { id: string; json: string }[] = [];
  let url = '/v1/projects?since=2000-01-01T00:00:00Z&limit=100';
  for (;;) {
    const body = (await h.get(url, key)).json();
    for (const p of body.projects) rows.push({ id: p.id, json: JSON.stringify(p) });
    if (!body.hasMore) return rows;
    url = `/v1/projects?cursor=${body.cursor}&limit=100`;
  }
}

describe('GET /v1/projects/changes on the bundled sample', () => {
  let h: Harness;
  let key: string;
  let base: string;
  const lines = readFileSync(SAMPLE_FILE, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');

  beforeAll(async () => {
    h = await createHarness({ env: { PULSEBOARD_RATE_LIMIT: '50' } });
    const ingestor = createIngestor(h.stores.log, { followerProvider: h.config.PULSEBOARD_FOLLOWER_PROVIDER });
    for (const line of lines) await ingestor.ingest(line, 'ndjson');
    key = await h.key('mirror', ['allow', 'link']);
    await h.stores.catchUp();
    base = await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => h.close());

  it('sends every written row in delta order, the Project JSON as a delta page has it, and never thesis text or private fields', async () => {
    const expected = await deltaRows(h, key);
    assert.ok(expected.length >= 300, `${expected.length} rows`);
    const stream = await openStream(`${base}/v1/projects/changes?since=2000-01-01T00:00:00Z`, key);
    try {
      assert.equal(stream.status, 200);
      assert.equal(stream.headers.get('content-type'), 'text/event-stream; charset=utf-8');
      assert.equal(stream.headers.get('cache-control'), 'private, no-store');
      assert.ok(stream.headers.get('ratelimit-remaining'));
      const rows = await stream.rows(expected.length);
      assert.deepEqual(
        rows.map((e) => e.data),
        expected.map((r) => r.json),
      );
      // Each id is the cursor after its own row: (seq, id) rising, naming that row.
      let previous = { s: 0, i: '' };
      for (const [n, event] of rows.entries()) {
        const at = cursorPosition(event.id!);
        assert.equal(at.i, expected[n]!.id);
        assert.ok(at.s > previous.s || (at.s === previous.s && at.i > previous.i));
        previous = at;
      }

      const secrets: string[] = [];
      for (const line of lines) {
        const message = JSON.parse(line) as { type: string; data: Record<string, unknown> };
        if (message.type === 'call.recorded') secrets.push(String(message.data['thesisText']));
        if (message.type === 'vote.cast')
          for (const f of ['name', 'avatar'])
            if (typeof message.data[f] === 'string') secrets.push(message.data[f] as string);
        if (message.type === 'ask.updated' && typeof message.data['answer'] === 'string')
          secrets.push(message.data['answer']);
      }
      const distinct = [...new Set(secrets.filter((s) => s.length >= 12))];
      assert.ok(distinct.length > 100, `${distinct.length} private texts to look for`);
      const text = stream.text();
      for (const secret of distinct) assert.ok(!text.includes(secret), 'a private text reached the stream');
      for (const field of ['"voters"', '"thesisText"', '"thesis"', '"answer"', '"question"'])
        assert.ok(!text.includes(field), `${field} in the stream`);
    } finally {
      stream.abort();
    }
  });

  it('spends one request per opening, allows 2 open streams per key and refuses the third with 429', async () => {
    const first = await openStream(`${base}/v1/projects/changes?since=now`, key);
    const second = await openStream(`${base}/v1/projects/changes?since=now`, key);
    try {
      assert.equal(first.status, 200);
      assert.equal(second.status, 200);
      assert.equal(
        Number(second.headers.get('ratelimit-remaining')),
        Number(first.headers.get('ratelimit-remaining')) - 1,
      );
      const third = await fetch(`${base}/v1/projects/changes?since=now`, {
        headers: { authorization: `Bearer ${key}` },
      });
      assert.equal(third.status, 429);
      assert.ok(Number(third.headers.get('retry-after')) >= 1);
      const body = (await third.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'rate_limited');
      assert.match(body.error.message, /At most 2 change streams/);
      // Another key is not affected.
      const other = await h.key('other');
      const theirs = await openStream(`${base}/v1/projects/changes?since=now`, other);
      assert.equal(theirs.status, 200);
      theirs.abort();
      // Closing one gives its slot back once the server sees the connection end.
      first.abort();
      assert.ok(await eventually(() => h.services.changes.openCount() <= 1));
      const again = await openStream(`${base}/v1/projects/changes?since=now`, key);
      assert.equal(again.status, 200);
      again.abort();
    } finally {
      first.abort();
      second.abort();
    }
    assert.ok(await eventually(() => h.services.changes.openCount() === 0));
  });

  it('refuses a bad starting point with the error envelope, before taking a slot', async () => {
    const cases: [string, Record<string, string>, number, RegExp][] = [
      ['/v1/projects/changes', {}, 400, /send 'cursor'.*'since'.*Last-Event-ID/],
      ['/v1/projects/changes?cursor=nope', {}, 400, /parameter 'cursor' is not a cursor/],
      ['/v1/projects/changes?since=now', { 'last-event-id': 'nope' }, 400, /header 'Last-Event-ID' is not a cursor/],
      ['/v1/projects/changes?since=yesterday', {}, 400, /'since'/],
      ['/v1/projects/changes?since=now&limit=5', {}, 400, /unknown parameter 'limit'/],
      ['/v1/projects/changes?since=now&cursor=abc', {}, 400, /either 'since'.*or 'cursor'/],
    ];
    for (const [url, headers, status, message] of cases) {
      const res = await fetch(`${base}${url}`, { headers: { authorization: `Bearer ${key}`, ...headers } });
      assert.equal(res.status, status, url);
      assert.match(res.headers.get('content-type') ?? '', /application\/json/);
      const body = (await res.json()) as { error: { code: string; message: string } };
      assert.match(body.error.message, message, url);
    }
    const unauthenticated = await fetch(`${base}/v1/projects/changes?since=now`);
    assert.equal(unauthenticated.status, 401);
    const filtered = (await h.get('/v1/projects?since=now&has_dossier=true', key)).json().cursor as string;
    const mismatch = await fetch(`${base}/v1/projects/changes?cursor=${filtered}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(mismatch.status, 400);
    assert.equal(h.services.changes.openCount(), 0);
  });

  it('sends a comment heartbeat while idle', async () => {
    const streams = createChangeStreams({
      projects: h.services.projects,
      commits: h.services.commits,
      heartbeatMs: 50,
    });
    const gone = new AbortController();
    const opened = await streams.open(
      { keyId: 'k', authorization: undefined },
      { since: 'now' },
      undefined,
      gone.signal,
    );
    assert.ok(opened.ok);
    try {
      const iterator = opened.value.events[Symbol.asyncIterator]();
      const first = await iterator.next();
      assert.deepEqual(first.value, { kind: 'heartbeat' });
      gone.abort();
      assert.equal((await iterator.next()).done, true, 'the client going away ends the stream');
    } finally {
      opened.value.close();
    }
  });
});

describe('change stream and shutdown', () => {
  it('delivers a write committed while open, and ends open streams cleanly when the server closes', async () => {
    const h = await createHarness();
    try {
      const key = await h.key('mirror');
      await h.stores.catchUp();
      const base = await h.app.listen({ host: '127.0.0.1', port: 0 });
      const stream = await openStream(`${base}/v1/projects/changes?since=now`, key);
      assert.ok(await eventually(() => h.services.commits.waiting() === 1));
      await appendSightings(h.stores.log, { first: 0, count: 2, prefix: 'sd' });
      await h.stores.catchUp();
      const rows = await stream.rows(2);
      assert.deepEqual(
        rows.map((r) => JSON.parse(r.data!).id),
        ['sd-0', 'sd-1'],
      );
      const t0 = performance.now();
      await h.app.close();
      await stream.ended;
      assert.ok(performance.now() - t0 < 10_000);
      assert.equal(h.services.changes.openCount(), 0);
    } finally {
      await h.close();
    }
  });
});

describe('long-poll over HTTP and shutdown', () => {
  it('a held long-poll is answered and the server closes without waiting for the wait', async () => {
    const h = await createHarness();
    try {
      const key = await h.key('mirror');
      await h.stores.catchUp();
      const base = await h.app.listen({ host: '127.0.0.1', port: 0 });
      const cursor = (await h.get('/v1/projects?since=now', key)).json().cursor as string;
      const answer = fetch(`${base}/v1/projects?cursor=${cursor}&wait=30`, {
        headers: { authorization: `Bearer ${key}` },
      });
      assert.ok(await eventually(() => h.services.commits.waiting() === 1));
      const t0 = performance.now();
      await h.app.close();
      const res = await answer;
      assert.equal(res.status, 200);
      const body = (await res.json()) as { projects: unknown[]; cursor: string };
      assert.deepEqual(body.projects, []);
      assert.equal(body.cursor, cursor);
      assert.ok(performance.now() - t0 < 10_000, `closed after ${(performance.now() - t0).toFixed(0)} ms`);
    } finally {
      await h.close();
    }
  });
});
