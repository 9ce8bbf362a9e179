import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { asksProjector, foldAsks, type AsksState, type StoredAsks } from '../../projectors/asks.ts';
import type { Entity } from '../../projectors/projector.ts';
import { askListSchema } from '../../readmodels/schemas.ts';
import { foldEvents } from '../../projectors/runner.ts';
import { eventFactory } from '../support/events.ts';

type E = Entity<StoredAsks, AsksState> | null;

function foldAll(events: ReturnType<ReturnType<typeof eventFactory>>[]): E {
  let entity: E = null;
  for (const event of events) entity = foldAsks(entity, event);
  return entity;
}

const asked = (projectId: string, askId: string, at: string, question = `question ${askId}`) => ({
  projectId,
  askId,
  question,
  owner: 'alice',
  at,
});

describe('asks projector', () => {
  it('creates a queued ask from ask.asked and a question-less ask from research.requested', () => {
    const ev = eventFactory();
    const entity = foldAll([
      ev('ask.asked', asked('p1', 'a1', '2026-11-01T10:00:00Z', 'Who are the founders?')),
      ev('research.requested', { projectId: 'p1', requestId: 'r1', owner: 'alice', at: '2026-11-02T10:00:00Z' }),
    ]);
    assert.ok(entity);
    assert.equal(entity.doc.projectId, 'p1');
    assert.deepEqual(entity.doc.asks, [
      { id: 'r1', question: null, askedAt: '2026-11-02T10:00:00Z', status: 'queued', answer: null, answeredAt: null },
      {
        id: 'a1',
        question: 'Who are the founders?',
        askedAt: '2026-11-01T10:00:00Z',
        status: 'queued',
        answer: null,
        answeredAt: null,
      },
    ]);
    assert.ok(askListSchema.safeParse({ ...entity.doc, readAt: '2026-11-03T00:00:00Z' }).success);
  });

  it('applies ask.updated: status, answer (absent keeps it, null clears it), answeredAt when answered', () => {
    const ev = eventFactory();
    const base = [ev('ask.asked', asked('p1', 'a1', '2026-11-01T10:00:00Z'))];
    const researching = foldAll([
      ...base,
      ev('ask.updated', { projectId: 'p1', askId: 'a1', status: 'researching', at: '2026-11-01T11:00:00Z' }),
    ]);
    assert.deepEqual(
      {
        status: researching!.doc.asks[0]!.status,
        answer: researching!.doc.asks[0]!.answer,
        answeredAt: researching!.doc.asks[0]!.answeredAt,
      },
      { status: 'researching', answer: null, answeredAt: null },
    );

    const ev2 = eventFactory();
    const answered = foldAll([
      ev2('ask.asked', asked('p1', 'a1', '2026-11-01T10:00:00Z')),
      ev2('ask.updated', {
        projectId: 'p1',
        askId: 'a1',
        status: 'answered',
        answer: 'Two founders.',
        at: '2026-11-01T12:00:00Z',
      }),
      // Reopened without an answer field: the answer and its time stay.
      ev2('ask.updated', { projectId: 'p1', askId: 'a1', status: 'researching', at: '2026-11-01T13:00:00Z' }),
    ]);
    assert.deepEqual(answered!.doc.asks[0], {
      id: 'a1',
      question: 'question a1',
      askedAt: '2026-11-01T10:00:00Z',
      status: 'researching',
      answer: 'Two founders.',
      answeredAt: '2026-11-01T12:00:00Z',
    });

    const cleared = foldAsks(
      answered,
      ev2('ask.updated', { projectId: 'p1', askId: 'a1', status: 'failed', answer: null, at: '2026-11-01T14:00:00Z' }),
    );
    assert.equal(cleared!.doc.asks[0]!.answer, null);
    assert.equal(cleared!.doc.asks[0]!.status, 'failed');
  });

  it('creates an unknown ask from ask.updated with question and askedAt null, ordered by its first event time', () => {
    const ev = eventFactory();
    const entity = foldAll([
      ev('ask.asked', asked('p1', 'a1', '2026-11-01T10:00:00Z')),
      ev('ask.asked', asked('p1', 'a3', '2026-11-03T10:00:00Z')),
      ev('ask.updated', {
        projectId: 'p1',
        askId: 'x9',
        status: 'answered',
        answer: 'From the desk.',
        at: '2026-11-02T10:00:00Z',
      }),
      // A later update does not move it: the first event's time orders it.
      ev('ask.updated', {
        projectId: 'p1',
        askId: 'x9',
        status: 'answered',
        answer: 'Revised.',
        at: '2026-11-05T10:00:00Z',
      }),
    ]);
    assert.deepEqual(
      entity!.doc.asks.map((a) => a.id),
      ['a3', 'x9', 'a1'],
    );
    assert.deepEqual(entity!.doc.asks[1], {
      id: 'x9',
      question: null,
      askedAt: null,
      status: 'answered',
      answer: 'Revised.',
      answeredAt: '2026-11-05T10:00:00Z',
    });
  });

  it('orders newest first by askedAt, then by id descending', () => {
    const ev = eventFactory();
    const entity = foldAll([
      ev('ask.asked', asked('p1', 'b', '2026-11-01T10:00:00Z')),
      ev('ask.asked', asked('p1', 'c', '2026-11-01T10:00:00Z')),
      ev('ask.asked', asked('p1', 'a', '2026-11-01T10:00:00Z')),
      ev('ask.asked', asked('p1', 'old', '2026-10-01T10:00:00Z')),
      ev('ask.asked', asked('p1', 'new', '2026-11-09T10:00:00Z')),
    ]);
    assert.deepEqual(
      entity!.doc.asks.map((a) => a.id),
      ['new', 'c', 'b', 'a', 'old'],
    );
  });

  it('fills question and askedAt of an ask first seen through an update, keeping the status the updates set', () => {
    const ev = eventFactory();
    const entity = foldAll([
      ev('ask.updated', { projectId: 'p1', askId: 'a1', status: 'researching', at: '2026-11-01T11:00:00Z' }),
      ev('ask.asked', asked('p1', 'a1', '2026-11-01T10:00:00Z', 'Late question')),
    ]);
    assert.deepEqual(entity!.doc.asks, [
      {
        id: 'a1',
        question: 'Late question',
        askedAt: '2026-11-01T10:00:00Z',
        status: 'researching',
        answer: null,
        answeredAt: null,
      },
    ]);
  });

  it('keys by project, ignores other event types, and folds the same through the runner batch code', () => {
    const ev = eventFactory();
    const events = [
      ev('ask.asked', asked('p1', 'a1', '2026-11-01T10:00:00Z')),
      ev('ask.asked', asked('p2', 'b1', '2026-11-01T11:00:00Z')),
      ev('research.updated', { projectId: 'p1', state: 'researching', at: '2026-11-01T12:00:00Z' }),
    ];
    assert.equal(asksProjector.keyOf(events[2]!), 'p1');
    assert.equal(foldAsks(null, events[2]!), null);
    assert.ok(!asksProjector.typePrefixes.some((prefix) => 'research.updated'.startsWith(prefix)));
    const docs = foldEvents(asksProjector, new Map(), events.slice(0, 2));
    assert.deepEqual([...docs.keys()].sort(), ['p1', 'p2']);
    assert.deepEqual(
      docs.get('p2')!.doc.asks.map((a) => a.id),
      ['b1'],
    );
    assert.equal(docs.get('p2')!.seq, 2);
  });
});
