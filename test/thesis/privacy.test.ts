import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { it } from 'vitest';
import { createHttpThesisSource } from '../../ingest/thesis-reader/http-source.ts';
import { createThesisReader } from '../../ingest/thesis-reader/reader.ts';
import type { ThesisSource } from '../../ingest/thesis-reader/source.ts';
import { projectors } from '../../projectors/registry.ts';
import { THESIS_COLLECTION } from '../../projectors/thesis.ts';
import type { Result } from '../../service/errors.ts';
import { createThesisFeed } from '../../service/thesis/feed.ts';
import { createAccess } from '../../service/access.ts';
import { assembleStores } from '../../service/stores.ts';
import { contractOf, harness, item } from './helpers.ts';

const MARK = 'SECRET-THESIS';

/** Everything written to stdout and stderr while `work` runs (the default logger writes to stderr). */
async function capturingOutput<T>(work: () => Promise<T>): Promise<{ value: T; output: string }> {
  let output = '';
  const original = { out: process.stdout.write.bind(process.stdout), err: process.stderr.write.bind(process.stderr) };
  const capture = (chunk: unknown) => {
    output += typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString();
    return true;
  };
  process.stdout.write = capture as typeof process.stdout.write;
  process.stderr.write = capture as typeof process.stderr.write;
  try {
    return { value: await work(), output };
  } finally {
    process.stdout.write = original.out;
    process.stderr.write = original.err;
  }
}

it('no thesis text in logs, output, errors, outcomes, other read models or other events', async () => {
  // A provider that leaks item text in an error body and in malformed JSON.
  const provider = createServer((req, res) => {
    if (req.url?.includes('/bad/')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(`{"theses": [{"body": "${MARK}-in-malformed-json`);
    }
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: `${MARK}-in-error-body` }));
  });
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;

  const routes: Record<string, ThesisSource> = {
    [contractOf(1)]: {
      read: async () => ({
        ok: true,
        items: [item(1), item(2), item(3)],
        moreAtSource: true,
        sourceUrl: 'https://source.example/t',
      }),
    },
    [contractOf(2)]: createHttpThesisSource({ baseUrl: `${base}/bad`, timeoutMs: 2_000 }),
    [contractOf(3)]: createHttpThesisSource({ baseUrl: `${base}/err`, timeoutMs: 2_000 }),
    [contractOf(4)]: {
      read: async () => {
        throw new Error(`${MARK}-in-an-exception`);
      },
    },
    [contractOf(5)]: {
      read: async () => ({
        ok: true,
        items: [item(5, { text: `${MARK}-5`, createdAt: 'not a date' })],
        moreAtSource: false,
        sourceUrl: 'https://source.example/t',
      }),
    },
  };
  const routing: ThesisSource = { read: (contract) => routes[contract]!.read(contract) };
  const h = await harness({ source: routing });
  const errorsSeen: unknown[] = [];
  const thesisReads: unknown[] = [];
  const keep = <T>(result: Result<T>, isThesisRead: boolean) => {
    if (!result.ok) errorsSeen.push(result.error);
    else if (isThesisRead) thesisReads.push(result.value);
    return result;
  };

  try {
    const { output } = await capturingOutput(async () => {
      // The same feed and reader with their default (stderr) logger, so real log output is scanned too.
      const access = createAccess(h.store, h.clock.now);
      const feed = createThesisFeed({
        log: h.log,
        store: h.store,
        access,
        config: h.config,
        heartbeat: h.heartbeat,
        now: h.clock.now,
      });
      const reader = createThesisReader({
        log: h.log,
        store: h.store,
        source: routing,
        heartbeat: h.heartbeat,
        now: h.clock.now,
      });
      const ann = await h.member('ann');
      for (let n = 1; n <= 3; n++) keep(await feed.request(ann, { contract: contractOf(n) }), true);
      for (let n = 4; n <= 5; n++) keep(await h.feed.request(ann, { contract: contractOf(n) }), true);
      keep(await h.feed.request(ann, { contract: contractOf(1) }), true);
      await reader.runOnce();
      await h.feed.request(ann, { contract: contractOf(4) });
      await h.feed.request(ann, { contract: contractOf(5) });
      for (let n = 1; n <= 5; n++) {
        keep(await feed.status(ann, { contract: contractOf(n) }), true);
        keep(await h.feed.status(ann, { contract: contractOf(n) }), true);
        keep(await feed.request(ann, { contract: contractOf(n) }), true); // 200 cache hit or 429 cooldown
      }
      keep(await feed.request(ann, { contract: contractOf(1), note: `${MARK}-in-input` }), true);
      keep(await feed.status({ keyId: 'k', owner: 'stranger' }, { contract: contractOf(1) }), true);
      await h.heartbeat.end();
      keep(await feed.request(ann, { contract: contractOf(9) }), true);
    });

    // The scan is real: the text is stored and served where it belongs.
    const saved = (await h.events()).filter((e) => e.type === 'thesis.saved');
    assert.ok(JSON.stringify(saved).includes(`${MARK}-1`));
    assert.ok(JSON.stringify(thesisReads).includes(`${MARK}-1`));

    const stores = assembleStores(h.log, h.store);
    await stores.catchUp();
    const otherModels: unknown[] = [];
    for (const projector of projectors) {
      if (projector.collection === THESIS_COLLECTION) continue;
      otherModels.push((await h.store.list(projector.collection, { offset: 0, limit: 10_000 })).docs);
    }
    const otherEvents = (await h.log.readAll({ afterPosition: 0, limit: 100_000 })).filter(
      (e) => e.type !== 'thesis.saved',
    );
    const outcomes = thesisReads.map(
      (r) =>
        (r as { status?: { lastOutcome: unknown }; lastOutcome?: unknown }).status?.lastOutcome ??
        (r as { lastOutcome?: unknown }).lastOutcome,
    );

    assert.ok(errorsSeen.length >= 4, 'refusals were produced (400, 403, 429, 503)');
    assert.ok(h.logger.lines.length > 0, 'the capturing logger saw lines');
    assert.ok(output.length > 0, 'the default logger wrote to stderr');
    const scanned = {
      capturedLogger: h.logger.lines,
      stdoutAndStderr: output,
      errors: errorsSeen,
      lastOutcomes: outcomes,
      otherReadModels: otherModels,
      eventsOtherThanSavedSnapshots: otherEvents,
    };
    for (const [where, value] of Object.entries(scanned)) {
      assert.ok(!JSON.stringify(value).includes(MARK), `thesis text found in ${where}`);
    }
  } finally {
    await h.close();
    provider.closeAllConnections();
    await new Promise((resolve) => provider.close(resolve));
  }
});
