import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { isKnownEventType, parseEventData } from '../../events/catalogue.ts';
import { streams } from '../../events/streams.ts';
import { fitThesisText } from '../../ingest/thesis-reader/provider-schema.ts';
import { createSampleThesisSource, SAMPLE_SOURCE_HOST } from '../../ingest/thesis-reader/sample-source.ts';
import { selectThesisItems } from '../../ingest/thesis-reader/select.ts';
import { createThesisSource } from '../../ingest/thesis-reader/create-source.ts';
import {
  foldThesisStream,
  THESIS_COLLECTION,
  type ThesisFoldState,
  type ThesisRecord,
} from '../../projectors/thesis.ts';
import { THESIS_TEXT_MAX, thesisItemSchema, thesisStatusSchema } from '../../readmodels/schemas.ts';
import { secondsToUtcMidnight } from '../../service/thesis/limits.ts';
import { readThesisRecord } from '../../service/thesis/records.ts';
import { toThesisStatus } from '../../service/thesis/status.ts';
import { contractOf, harness, item, scriptedSource, testConfig } from './helpers.ts';

describe('thesis parts', () => {
  it('registers every thesis event type in the catalogue and validates its data', () => {
    for (const type of [
      'thesis.requested',
      'thesis.started',
      'thesis.saved',
      'thesis.failed',
      'thesis.quota.taken',
      'thesis.job.opened',
      'thesis.jobs.rotated',
    ]) {
      assert.ok(isKnownEventType(type), type);
    }
    const bad = parseEventData('thesis.requested', {
      contract: '0x1',
      requestId: 'x',
      owner: 'a',
      day: 'today',
      at: 'now',
      extra: 1,
    });
    assert.equal(bad.ok, false);
  });

  it('selects items at or above 1000 USD, newest first, one per id, at most 25, hasMore when more qualified', () => {
    const at = (m: number) => new Date(Date.UTC(2026, 0, 1, 0, m)).toISOString();
    const items = [
      item(1, { createdAt: at(1), trade: { usdValue: 1000, realizedPnlUsd: null, unrealizedPnlUsd: null } }),
      item(2, { createdAt: at(5), trade: { usdValue: 999.99, realizedPnlUsd: null, unrealizedPnlUsd: null } }),
      item(3, { createdAt: at(3), trade: { usdValue: null, realizedPnlUsd: null, unrealizedPnlUsd: null } }),
      item(4, { createdAt: at(4) }),
      item(4, { createdAt: at(9) }),
    ];
    assert.deepEqual(
      selectThesisItems(items, false).items.map((i) => i.id),
      ['item-4', 'item-1'],
    );
    assert.equal(selectThesisItems(items, false).hasMore, false);
    assert.equal(selectThesisItems(items, true).hasMore, true, 'the source said it holds more');
    const many = Array.from({ length: 26 }, (_, n) => item(n, { createdAt: at(n) }));
    const selected = selectThesisItems(many, false);
    assert.equal(selected.items.length, 25);
    assert.equal(selected.hasMore, true);
    assert.equal(selected.items[0]!.id, 'item-25');
    assert.equal(selectThesisItems(many.slice(0, 25), false).hasMore, false);
  });

  it('shortens over-long provider text to the item limit with a note', () => {
    const long = fitThesisText('x'.repeat(20_000));
    assert.equal(long.length, THESIS_TEXT_MAX);
    assert.match(long, /shortened to fit; the full text is at the source\]$/);
    assert.equal(fitThesisText('short'), 'short');
  });

  it('the sample source is deterministic, clearly labelled and valid', async () => {
    const now = () => new Date('2026-11-22T10:00:00.000Z');
    const first = await createSampleThesisSource({ now }).read(contractOf(7));
    const second = await createSampleThesisSource({ now }).read(contractOf(7));
    assert.deepEqual(first, second);
    assert.ok(first.ok);
    assert.ok(first.sourceUrl.startsWith(`${SAMPLE_SOURCE_HOST}/sample/4663/`));
    for (const i of first.items) {
      thesisItemSchema.parse(i);
      assert.ok(i.text.startsWith('[Sample data, not a real thesis]'));
      assert.match(i.author.name ?? '', /^Sample author/);
    }
    const kept = selectThesisItems(first.items, false).items.length;
    assert.ok(kept > 0 && kept < first.items.length, 'the threshold visibly drops some sample items');
  });

  it('the embedded default flow works end to end with the sample source', async () => {
    const h = await harness({ source: createSampleThesisSource() });
    try {
      const ann = await h.member('ann');
      const queued = await h.feed.request(ann, { contract: contractOf(8) });
      assert.ok(queued.ok && queued.value.httpStatus === 202);
      assert.equal(await h.reader.runOnce(), 1);
      const ready = await h.feed.status(ann, { contract: contractOf(8) });
      assert.ok(ready.ok);
      const status = thesisStatusSchema.parse(ready.value);
      assert.equal(status.status, 'ready');
      assert.ok(status.snapshot!.items.length > 0 && status.snapshot!.items.length <= 25);
      assert.ok(status.snapshot!.sourceUrl.startsWith(SAMPLE_SOURCE_HOST));
    } finally {
      await h.close();
    }
  });

  it('chooses the HTTP source when PULSEBOARD_THESIS_SOURCE_URL is set, the sample otherwise, and refuses a bad URL', () => {
    const sample = createThesisSource(testConfig());
    assert.ok(sample.ok && sample.kind === 'sample');
    const http = createThesisSource(
      testConfig({ PULSEBOARD_THESIS_SOURCE_URL: 'https://provider.example/api', PULSEBOARD_THESIS_SOURCE_KEY: 'k' }),
    );
    assert.ok(http.ok && http.kind === 'http');
    const bad = createThesisSource(testConfig({ PULSEBOARD_THESIS_SOURCE_URL: 'ftp:/nope' }));
    assert.deepEqual(bad, { ok: false, reason: 'PULSEBOARD_THESIS_SOURCE_URL must be an http(s) URL' });
    assert.equal(testConfig().PULSEBOARD_THESIS_SOURCE_TIMEOUT_MS, 15_000);
  });

  it('every derived status validates against the strict ThesisStatus schema', () => {
    const now = new Date('2026-11-22T10:00:00.000Z');
    const snapshot = {
      contract: contractOf(1),
      networkId: 4663 as const,
      fetchedAt: '2026-11-22T09:50:00.000Z',
      threshold: 1000 as const,
      limit: 25 as const,
      hasMore: false,
      sourceUrl: 'https://source.example/t',
      items: [item(1)],
    };
    const base: ThesisRecord = {
      contract: contractOf(1),
      job: null,
      snapshot: null,
      lastOutcome: null,
      lastOutcomeAt: null,
      cooldownUntil: null,
    };
    const job = {
      requestId: '00000000-0000-4000-8000-000000000000',
      requestedAt: '2026-11-22T09:49:00.000Z',
      startedAt: null,
    };
    const records: ThesisRecord[] = [
      base,
      { ...base, job: { ...job, phase: 'queued' } },
      { ...base, job: { ...job, phase: 'running', startedAt: '2026-11-22T09:49:30.000Z' } },
      {
        ...base,
        job: { ...job, phase: 'saved' },
        snapshot,
        lastOutcome: 'saved 1 item at or above 1000 USD',
        lastOutcomeAt: snapshot.fetchedAt,
      },
      {
        ...base,
        job: { ...job, phase: 'failed' },
        lastOutcome: 'source answered HTTP 500',
        lastOutcomeAt: '2026-11-22T09:50:00.000Z',
        cooldownUntil: '2026-11-22T10:00:00.001Z',
      },
    ];
    const seen = records.map(
      (r) => thesisStatusSchema.parse(toThesisStatus(r, { now, workerAvailable: false })).status,
    );
    assert.deepEqual(seen, ['not_requested', 'queued', 'running', 'ready', 'failed']);
    assert.throws(() =>
      thesisStatusSchema.parse({ ...toThesisStatus(null, { now, workerAvailable: true }), extra: 1 }),
    );
  });

  it('the projection rebuilt from the log equals the stream fold, and reads fall back to the fold while it lags', async () => {
    const { source } = scriptedSource(() => ({
      ok: true,
      items: [item(1)],
      moreAtSource: false,
      sourceUrl: 'https://source.example/t',
    }));
    const h = await harness({ source });
    try {
      const ann = await h.member('ann');
      await h.feed.request(ann, { contract: contractOf(1) });
      await h.reader.runOnce();
      // Not projected yet: the read folds the stream.
      assert.equal(await h.store.get(THESIS_COLLECTION, contractOf(1)), null);
      const lagging = await readThesisRecord(h.log, h.store, contractOf(1));
      assert.equal(lagging.record?.job?.phase, 'saved');
      await h.project();
      const projected = await h.store.get<ThesisRecord, ThesisFoldState>(THESIS_COLLECTION, contractOf(1));
      const events = await h.log.readStream(streams.thesis(contractOf(1)));
      assert.deepEqual(projected?.doc, foldThesisStream(events));
      assert.equal(projected?.state.revision, events.length - 1);
      assert.deepEqual(await readThesisRecord(h.log, h.store, contractOf(1)), lagging);
    } finally {
      await h.close();
    }
  });

  it('counts seconds to the next UTC midnight', () => {
    assert.equal(secondsToUtcMidnight(new Date('2026-11-22T23:59:59.500Z')), 1);
    assert.equal(secondsToUtcMidnight(new Date('2026-11-22T00:00:00.000Z')), 86_400);
  });
});
