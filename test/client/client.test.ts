import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
// Through the package export, as a consumer imports it.
import { createClient, type Project } from 'pulseboard/client';
import { nodeSend } from '../../client/node-http.ts';
import { runCli, startServe, stopChild } from '../support/cli.ts';
import { watchedFetch } from '../support/watched-fetch.ts';

const EPOCH = '2000-01-01T00:00:00Z';

/** A fetch that answers the first `times` calls itself (a status with Retry-After, or a thrown network error), then the real one. */
function flakyFetch(times: number, answer: 'network' | { status: number; retryAfter?: string }) {
  let left = times;
  const seen: string[] = [];
  const fetchFn: typeof fetch = async (input, init) => {
    seen.push(String(input));
    if (left > 0) {
      left -= 1;
      if (answer === 'network') throw new TypeError('fetch failed', { cause: new Error('connect ECONNRESET') });
      const body = JSON.stringify({
        error: { code: answer.status === 429 ? 'rate_limited' : 'unavailable', message: 'try later' },
      });
      return new Response(body, {
        status: answer.status,
        headers: {
          'content-type': 'application/json',
          ...(answer.retryAfter ? { 'retry-after': answer.retryAfter } : {}),
        },
      });
    }
    return fetch(input, init);
  };
  return { fetch: fetchFn, seen };
}

/** A server on a loopback port of its own that answers every request with `handle`; its URL. */
async function tinyServer(handle: Parameters<typeof createServer>[1]): Promise<{ url: string; server: Server }> {
  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('pulseboard/client against a running server', () => {
  let dir: string;
  let child: ChildProcess;
  let url = '';
  let key = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pulseboard-client-'));
    ({ child, url, key } = await startServe(
      { PULSEBOARD_DATA_DIR: dir, PULSEBOARD_RATE_LIMIT: '100000' },
      { key: true },
    ));
    assert.ok(url && key, 'the server started and printed a key');
  });

  afterAll(async () => {
    await stopChild(child, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers every REST read as a typed value', async () => {
    const client = createClient({ baseUrl: url, key });
    const board = await client.projects.board({ page: 2 });
    assert.ok(board.ok);
    assert.equal(board.value.page, 2);
    assert.equal(board.value.projects.length, 50);
    const first: Project = board.value.projects[0]!;

    const one = await client.projects.get(first.id, { include: 'context' });
    assert.ok(one.ok);
    assert.deepEqual(one.value.project, first);
    assert.ok(one.value.context);

    const history = await client.projects.history(first.id, { limit: 1 });
    assert.ok(history.ok);
    assert.equal(history.value.writes.length, 1);

    const found = await client.search(first.id);
    assert.ok(found.ok);
    assert.equal(found.value.state, 'found');
    assert.equal(found.value.project?.id, first.id);

    // As of a point: the board, one project and search name the point they answered for.
    const past = await client.projects.board({ asOf: new Date().toISOString() });
    assert.ok(past.ok);
    const point = past.value.asOf.cursor;
    const oneThen = await client.projects.get(first.id, { asOf: point });
    assert.ok(oneThen.ok);
    assert.equal(oneThen.value.asOf.cursor, point);
    const foundThen = await client.search(first.id, { asOf: point });
    assert.ok(foundThen.ok);
    assert.equal(foundThen.value.asOf.cursor, point);
    assert.equal(foundThen.value.project?.id, first.id);

    const pulse = await client.pulse.list();
    assert.ok(pulse.ok);
    assert.equal(pulse.value.beats.length, 8);
    const beat = await client.pulse.get(pulse.value.beats[0]!.id);
    assert.ok(beat.ok);
    assert.equal(beat.value.beat.id, pulse.value.beats[0]!.id);

    const calls = await client.calls.list({ limit: 2 });
    assert.ok(calls.ok);
    assert.equal(calls.value.calls.length, 2);
    const call = await client.calls.get(calls.value.calls[0]!.id);
    assert.ok(call.ok);
    assert.equal(call.value.call.id, calls.value.calls[0]!.id);

    // The local instance's key is allowlisted and linked (README): these reads are open to it.
    const asks = await client.projects.asks(first.id);
    assert.ok(asks.ok, JSON.stringify(asks));
    const thesis = await client.thesisFeed.get(`0x${'a'.repeat(40)}`);
    assert.ok(thesis.ok, JSON.stringify(thesis));
    assert.equal(thesis.value.status, 'not_requested');
  });

  it('asks a service on this machine for answers as they are, and for compressed ones when told', async () => {
    const encodings: (string | null)[] = [];
    const watching: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      encodings.push(response.headers.get('content-encoding'));
      return response;
    };
    assert.match(url, /^http:\/\/127\./);
    const plain = await createClient({ baseUrl: url, key, fetch: watching }).projects.board();
    const compressed = await createClient({ baseUrl: url, key, fetch: watching, compression: true }).projects.board();
    assert.ok(plain.ok && compressed.ok);
    assert.deepEqual(compressed.value.projects, plain.value.projects);
    assert.equal(encodings[0], null, 'a loopback service answers uncompressed');
    assert.match(String(encodings[1]), /^(br|gzip)$/, 'compression: true gets a compressed answer');
  });

  it('sends through node:http when given no fetch: compressed answers, redirects, cut-off answers, cancelling', async () => {
    // Asked for compressed answers, it gets one and reads it as fetch would.
    const send = nodeSend();
    const headers = { authorization: `Bearer ${key}`, accept: 'application/json' };
    const compressed = await send(`${url}/v1/projects`, {
      method: 'GET',
      headers,
      signal: new AbortController().signal,
    });
    assert.equal(compressed.status, 200);
    assert.match(String(compressed.headers.get('content-encoding')), /^(br|gzip)$/);
    const plain = await createClient({ baseUrl: url, key }).projects.board();
    assert.ok(plain.ok);
    assert.deepEqual((JSON.parse(await compressed.text()) as { projects: unknown }).projects, plain.value.projects);

    // A redirect is followed (by fetch, as before), with the key on the same origin.
    const redirect = await tinyServer((req, res) => {
      if (req.url !== '/here') return res.writeHead(307, { location: '/here' }).end();
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ key: req.headers.authorization }));
    });
    // An answer cut off before its Content-Length is a lost connection, not a short body.
    const cut = await tinyServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"projects":[');
      setImmediate(() => res.socket?.destroy());
    });
    try {
      const moved = await createClient({ baseUrl: redirect.url, key }).pulse.list();
      assert.deepEqual(moved.ok ? moved.value : moved.error, { key: `Bearer ${key}` });
      const short = await createClient({ baseUrl: cut.url, key, maxWaitSeconds: 0 }).pulse.list();
      assert.equal(short.ok ? null : short.error.code, 'network_error');
    } finally {
      redirect.server.close();
      cut.server.close();
    }

    // A long-poll in flight is cancelled by its signal.
    const head = await createClient({ baseUrl: url, key }).projects.delta({ since: EPOCH, limit: 100 });
    assert.ok(head.ok);
    let caughtUp = head.value;
    while (caughtUp.hasMore) {
      const next = await createClient({ baseUrl: url, key }).projects.delta({ cursor: caughtUp.cursor, limit: 100 });
      assert.ok(next.ok);
      caughtUp = next.value;
    }
    const controller = new AbortController();
    const held = createClient({ baseUrl: url, key }).projects.delta(
      { cursor: caughtUp.cursor, wait: 30 },
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 200);
    const cancelled = await held;
    assert.equal(cancelled.ok ? null : cancelled.error.code, 'aborted');
  });

  it('returns failures as values with code, message, status and retryAfterSeconds', async () => {
    const wrongKey = createClient({ baseUrl: url, key: `pbk_${'x'.repeat(43)}` });
    const refused = await wrongKey.projects.board();
    assert.deepEqual(refused.ok ? null : { ...refused.error, message: typeof refused.error.message }, {
      code: 'unauthorized',
      message: 'string',
      status: 401,
      retryAfterSeconds: null,
    });

    const client = createClient({ baseUrl: url, key });
    const missing = await client.projects.get('no-such-project-anywhere');
    assert.equal(missing.ok ? null : missing.error.code, 'not_found');
    assert.equal(missing.ok ? null : missing.error.status, 404);

    const bad = await client.projects.delta({ cursor: 'not-a-cursor' });
    assert.equal(bad.ok ? null : bad.error.code, 'bad_request');

    const nobody = createClient({ baseUrl: 'http://127.0.0.1:9', key, maxWaitSeconds: 0 });
    const lost = await nobody.pulse.list();
    assert.equal(lost.ok ? null : lost.error.code, 'network_error');
    assert.equal(lost.ok ? null : lost.error.status, null);

    const notUrl = await createClient({ baseUrl: 'ftp://example', key }).pulse.list();
    assert.equal(notUrl.ok ? null : notUrl.error.code, 'invalid_url');
  });

  it('waits out 429 and 503 as Retry-After says, and a lost connection, within the budget', async () => {
    for (const answer of [{ status: 429, retryAfter: '1' }, { status: 503, retryAfter: '1' }, 'network' as const]) {
      const flaky = flakyFetch(2, answer);
      const client = createClient({ baseUrl: url, key, fetch: flaky.fetch });
      const t0 = performance.now();
      const pulse = await client.pulse.list();
      assert.ok(pulse.ok, `${JSON.stringify(answer)}: ${JSON.stringify(pulse)}`);
      assert.equal(flaky.seen.length, 3);
      // Two waits of a second each (Retry-After), or 0.5 s + 1 s for a lost connection.
      assert.ok(performance.now() - t0 >= 1400, `${JSON.stringify(answer)} waited ${performance.now() - t0} ms`);
    }
    // A wait longer than the budget is not started: the failure comes back at once, with the server's advice.
    const long = flakyFetch(1, { status: 429, retryAfter: '45' });
    const impatient = createClient({ baseUrl: url, key, fetch: long.fetch, maxWaitSeconds: 10 });
    const refused = await impatient.pulse.list();
    assert.equal(refused.ok ? null : refused.error.code, 'rate_limited');
    assert.equal(refused.ok ? null : refused.error.retryAfterSeconds, 45);
    assert.equal(long.seen.length, 1);
  });

  it('cancels a wait with an AbortSignal', async () => {
    const flaky = flakyFetch(1, { status: 503, retryAfter: '30' });
    const client = createClient({ baseUrl: url, key, fetch: flaky.fetch });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const t0 = performance.now();
    const result = await client.pulse.list({ signal: controller.signal });
    assert.equal(result.ok ? null : result.error.code, 'aborted');
    assert.ok(performance.now() - t0 < 10_000);
  });

  it('walks the delta as pages, keeps its place through lost connections, and follows with a long-poll', async () => {
    // Every other request fails before reaching the server: the walk must neither skip nor repeat a row.
    let n = 0;
    const dropping: typeof fetch = async (input, init) => {
      n += 1;
      if (n % 2 === 1) throw new TypeError('fetch failed');
      return fetch(input, init);
    };
    const client = createClient({ baseUrl: url, key, fetch: dropping });
    const ids: string[] = [];
    const feed = client.projects.changes({ since: EPOCH, limit: 40 });
    let last: boolean | undefined;
    for await (const step of feed) {
      assert.ok(step.ok, JSON.stringify(step));
      ids.push(...step.page.projects.map((p) => p.id));
      last = step.caughtUp;
    }
    assert.equal(last, true);
    const board = await createClient({ baseUrl: url, key }).projects.board();
    assert.ok(board.ok);
    assert.equal(ids.length, board.value.total, 'every project once');
    assert.equal(new Set(ids).size, ids.length);
    assert.ok(feed.cursor);

    // Fetching ahead changes nothing in what is walked, and a consumer that stops early cancels the page in flight.
    const ahead: string[] = [];
    for await (const step of createClient({ baseUrl: url, key }).projects.changes({
      since: EPOCH,
      limit: 40,
      prefetch: true,
    })) {
      assert.ok(step.ok);
      ahead.push(...step.page.projects.map((p) => p.id));
    }
    assert.deepEqual(ahead, ids);
    // A page's follower is asked for once its Link header names it, before its own body is read:
    // each request after the first is sent while the body before it is still unread.
    const events: string[] = [];
    const watched = watchedFetch(events);
    const linked: string[] = [];
    for await (const step of createClient({ baseUrl: url, key, fetch: watched }).projects.changes({
      since: EPOCH,
      limit: 40,
      prefetch: true,
    })) {
      assert.ok(step.ok);
      linked.push(...step.page.projects.map((p) => p.id));
    }
    assert.deepEqual(linked, ids);
    const pages = Math.ceil(ids.length / 40);
    assert.ok(pages >= 3, 'several pages to walk');
    assert.deepEqual(
      events.slice(0, 4),
      ['request', 'request', 'body', 'request'],
      'the second page was asked for before the first body was read',
    );
    assert.equal(events.filter((e) => e === 'request').length, pages, 'no page asked for twice or past the end');
    const early = createClient({ baseUrl: url, key }).projects.changes({ since: EPOCH, limit: 40, prefetch: true });
    for await (const step of early) {
      assert.ok(step.ok);
      break;
    }
    assert.equal(early.cursor !== null, true);

    // Resume from the kept cursor with a long-poll: the next write arrives, nothing else.
    const follow = createClient({ baseUrl: url, key }).projects.changes({ cursor: feed.cursor, wait: 30 });
    const iterator = follow[Symbol.asyncIterator]();
    const caughtUp = await iterator.next();
    assert.ok(
      !caughtUp.done && caughtUp.value.ok && caughtUp.value.page.projects.length === 0 && caughtUp.value.caughtUp,
    );
    const next = iterator.next();
    const file = join(dir, 'one.ndjson');
    const message = {
      type: 'project.sighted',
      id: 'client-follow-1',
      at: '2026-11-21T00:00:00.000Z',
      data: { projectId: 'prj-client-1', handle: 'client_one' },
    };
    writeFileSync(file, `${JSON.stringify(message)}\n`);
    const ingested = await runCli(['ingest', file], { env: { PULSEBOARD_DATA_DIR: dir } });
    assert.equal(ingested.code, 0, ingested.stderr);
    const arrived = await next;
    assert.ok(!arrived.done && arrived.value.ok);
    assert.deepEqual(
      arrived.value.page.projects.map((p) => p.id),
      ['prj-client-1'],
    );
    await iterator.return?.();
  });

  it('yields a failure it cannot wait out once and ends, keeping the cursor of the last page', async () => {
    const client = createClient({ baseUrl: url, key });
    const feed = client.projects.changes({ cursor: 'bm90LWEtY3Vyc29y' });
    const steps = [];
    for await (const step of feed) steps.push(step);
    assert.equal(steps.length, 1);
    assert.equal(steps[0]!.ok ? null : steps[0]!.error.code, 'bad_request');
    assert.equal(feed.cursor, 'bm90LWEtY3Vyc29y');
  });
});
