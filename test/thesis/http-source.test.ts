import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createHttpThesisSource, THESIS_SOURCE_MAX_BODY_BYTES } from '../../ingest/thesis-reader/http-source.ts';
import type { ThesisSource } from '../../ingest/thesis-reader/source.ts';
import { thesisStatusSchema } from '../../readmodels/schemas.ts';
import { contractOf, harness } from './helpers.ts';

const SECRET = 'PROVIDER-BODY-SECRET';

function providerThesis(n: number, usd: number | null) {
  return {
    id: n,
    body: `${SECRET} thesis ${n}`,
    created_at: new Date(Date.UTC(2026, 10, 21, 0, n)).toISOString(),
    author: { display_name: `Writer ${n}`, username: `writer${n}`, avatar_url: null, verified: n % 2 === 0 },
    trade: { usd_value: usd, realized_pnl_usd: 1, unrealized_pnl_usd: null },
    extra_field_the_provider_added: true,
  };
}

type Seen = { mode: string; path: string; authorization: string | undefined };

/** A local provider: the first path segment picks how it misbehaves. */
function startProvider(): Promise<{ server: Server; base: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const mode = url.pathname.split('/')[1] ?? '';
    seen.push({ mode, path: url.pathname + url.search, authorization: req.headers.authorization });
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    switch (mode) {
      case 'slow': // never answers within the client's timeout
        setTimeout(() => json(200, { theses: [] }), 5_000).unref();
        return;
      case 'slow-body': // headers at once, then the body stalls
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"theses": [');
        return;
      case 'error':
        return json(500, { error: `${SECRET} internal details` });
      case 'unauthorized':
        return json(401, { error: 'bad key' });
      case 'malformed':
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(`{"theses": [{"body": "${SECRET} cut off`);
      case 'wrong-shape':
        return json(200, { theses: [{ id: 'x', text: `${SECRET} under another name`, created_at: 'yesterday' }] });
      case 'huge':
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(`{"theses": [], "pad": "${'x'.repeat(THESIS_SOURCE_MAX_BODY_BYTES)}"}`);
      case 'many': {
        // 40 items: 30 at or above 1000 USD (ids 1..30), 10 below; shuffled.
        const theses = Array.from({ length: 40 }, (_, i) => providerThesis(i + 1, i < 30 ? 1000 + i : 999));
        theses.sort((x, y) => ((x.id * 7) % 40) - ((y.id * 7) % 40));
        return json(200, { theses, permalink: 'https://provider.example/token/abc' });
      }
      default:
        return json(404, {});
    }
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({ server, base: `http://127.0.0.1:${port}`, seen });
    });
  });
}

let provider: Awaited<ReturnType<typeof startProvider>>;
beforeAll(async () => {
  provider = await startProvider();
});
afterAll(async () => {
  provider.server.closeAllConnections();
  await new Promise((resolve) => provider.server.close(resolve));
});

const source = (mode: string) =>
  createHttpThesisSource({ baseUrl: `${provider.base}/${mode}`, apiKey: 'test-key', timeoutMs: 300 });

describe('HTTP thesis source against a local provider', () => {
  it('maps every fault to a short outcome of its own words, each read made once', async () => {
    const expected: Record<string, string> = {
      slow: 'source did not answer within 300 ms',
      'slow-body': 'source did not answer within 300 ms',
      error: 'source answered HTTP 500',
      unauthorized: 'source refused the API key (HTTP 401)',
      malformed: 'source sent malformed JSON',
      'wrong-shape': 'source response did not match the expected shape (at theses.0.body)',
      huge: 'source sent more than 4 MiB',
    };
    for (const [mode, outcome] of Object.entries(expected)) {
      const before = provider.seen.filter((s) => s.mode === mode).length;
      const read = await source(mode).read(contractOf(1));
      assert.deepEqual(read, { ok: false, outcome }, mode);
      assert.equal(provider.seen.filter((s) => s.mode === mode).length, before + 1, `${mode}: exactly one request`);
    }
  });

  it('reports an unreachable provider', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const read = await createHttpThesisSource({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 300 }).read(
      contractOf(1),
    );
    assert.deepEqual(read, { ok: false, outcome: 'source could not be reached' });
  });

  it('sends the key, the contract and the threshold, and maps provider items', async () => {
    const read = await source('many').read(contractOf(7));
    assert.ok(read.ok);
    const last = provider.seen[provider.seen.length - 1]!;
    assert.equal(last.authorization, 'Bearer test-key');
    assert.equal(last.path, `/many/v1/networks/4663/tokens/${contractOf(7)}/theses?min_usd_value=1000`);
    assert.equal(read.items.length, 40);
    assert.equal(read.sourceUrl, 'https://provider.example/token/abc');
    const first = read.items.find((i) => i.id === '2')!;
    assert.deepEqual(first, {
      id: '2',
      text: `${SECRET} thesis 2`,
      createdAt: '2026-11-21T00:02:00.000Z',
      author: { name: 'Writer 2', handle: 'writer2', avatar: null, verified: true },
      trade: { usdValue: 1001, realizedPnlUsd: 1, unrealizedPnlUsd: null },
    });
  });

  it('through the reader: each fault is a failed status, more than 25 items is a ready snapshot of 25 with hasMore', async () => {
    const modes = ['slow', 'error', 'malformed', 'wrong-shape', 'many'];
    const byContract = new Map(modes.map((mode, i) => [contractOf(100 + i), source(mode)]));
    const routing: ThesisSource = { read: (contract) => byContract.get(contract)!.read(contract) };
    const h = await harness({ source: routing });
    try {
      const caller = await h.member('ann');
      for (const contract of byContract.keys()) assert.equal((await h.feed.request(caller, { contract })).ok, true);
      const requestsBefore = provider.seen.length;
      assert.equal(await h.reader.runOnce(), modes.length);
      assert.equal(await h.reader.runOnce(), 0, 'no retries');
      assert.equal(provider.seen.length, requestsBefore + modes.length, 'one request per job');

      const statusOf = async (mode: string) => {
        const result = await h.feed.status(caller, { contract: contractOf(100 + modes.indexOf(mode)) });
        assert.ok(result.ok);
        return thesisStatusSchema.parse(result.value);
      };
      for (const [mode, outcome] of [
        ['slow', 'source did not answer within 300 ms'],
        ['error', 'source answered HTTP 500'],
        ['malformed', 'source sent malformed JSON'],
        ['wrong-shape', 'source response did not match the expected shape (at theses.0.body)'],
      ] as const) {
        const status = await statusOf(mode);
        assert.equal(status.status, 'failed', mode);
        assert.equal(status.lastOutcome, outcome, mode);
        assert.equal(status.snapshot, null);
        assert.equal(status.nextEligibleAt, '2026-11-22T10:10:00.000Z');
      }
      const many = await statusOf('many');
      assert.equal(many.status, 'ready');
      assert.equal(many.lastOutcome, 'saved 25 items at or above 1000 USD; more at the source');
      assert.equal(many.snapshot?.hasMore, true);
      assert.equal(many.snapshot?.limit, 25);
      assert.equal(many.snapshot?.threshold, 1000);
      // Newest first: ids 30 down to 6 (createdAt grows with the id); nothing below 1000 USD.
      assert.deepEqual(
        many.snapshot?.items.map((i) => i.id),
        Array.from({ length: 25 }, (_, i) => String(30 - i)),
      );
      assert.ok(many.snapshot?.items.every((i) => (i.trade.usdValue ?? 0) >= 1000));
      for (const line of h.logger.lines) assert.ok(!JSON.stringify(line).includes(SECRET), 'no provider text in logs');
    } finally {
      await h.close();
    }
  });
});
