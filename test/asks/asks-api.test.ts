import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { changeOwner } from '../../service/access.ts';
import { askListSchema, askReceiptSchema } from '../../readmodels/schemas.ts';
import { createHarness, type Harness } from '../support/harness.ts';

const NOW = new Date('2026-11-20T08:00:00.000Z');

describe('GET /v1/projects/{handle}/ask and the asks service', () => {
  let h: Harness;
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    h = await createHarness({ now: () => NOW });
    alice = await h.key('alice', ['allow']);
    bob = await h.key('bob');
    await h.append('project.sighted', 's1', 'project-p1', {
      projectId: 'p1',
      at: '2026-11-01T00:00:00Z',
      handle: 'Alpha',
      fol: 10,
    });
    await h.append('project.sighted', 's2', 'project-p2', {
      projectId: 'p2',
      at: '2026-11-02T00:00:00Z',
      handle: 'beta',
      fol: 20,
    });
    await h.append('ask.updated', 'u1', 'project-p1', {
      projectId: 'p1',
      askId: 'desk-1',
      status: 'answered',
      answer: 'Launched in 2025.',
      at: '2026-11-03T00:00:00Z',
    });
    await h.stores.catchUp();
  });
  afterAll(() => h.close());

  it('serves the asks of a project by handle (any case, with @) and by id, with readAt', async () => {
    const byHandle = await h.get('/v1/projects/@alpha/ask', alice);
    assert.equal(byHandle.status, 200);
    assert.equal(byHandle.headers['cache-control'], 'private, max-age=0, must-revalidate');
    const body = byHandle.json();
    assert.ok(askListSchema.safeParse(body).success);
    assert.deepEqual(body, {
      projectId: 'p1',
      asks: [
        {
          id: 'desk-1',
          question: null,
          askedAt: null,
          status: 'answered',
          answer: 'Launched in 2025.',
          answeredAt: '2026-11-03T00:00:00Z',
        },
      ],
      readAt: NOW.toISOString(),
    });
    assert.equal((await h.get('/v1/projects/p1/ask', alice)).body, byHandle.body);
    assert.deepEqual((await h.get('/v1/projects/beta/ask', alice)).json(), {
      projectId: 'p2',
      asks: [],
      readAt: NOW.toISOString(),
    });
  });

  it('answers 404 for an unknown project, 400 for an unknown query parameter, 401 without a key', async () => {
    const missing = await h.get('/v1/projects/nobody/ask', alice);
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.json(), {
      error: { code: 'not_found', message: "no project with id or handle 'nobody'" },
    });
    const extra = await h.get('/v1/projects/p1/ask?limit=5', alice);
    assert.equal(extra.status, 400);
    assert.deepEqual(extra.json(), { error: { code: 'bad_request', message: "unknown parameter 'limit'" } });
    const anonymous = await h.get('/v1/projects/p1/ask');
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.json().error.code, 'unauthorized');
  });

  it('is forbidden to a key owner who is not allowlisted, before revealing whether the project exists', async () => {
    for (const url of ['/v1/projects/p1/ask', '/v1/projects/nobody/ask']) {
      const res = await h.get(url, bob);
      assert.equal(res.status, 403);
      assert.equal(res.json().error.code, 'forbidden');
    }
  });

  it('re-checks the allowlist on every call', async () => {
    const carol = await h.key('carol', ['allow']);
    assert.equal((await h.get('/v1/projects/p1/ask', carol)).status, 200);
    await changeOwner(h.stores, 'carol', 'deny');
    assert.equal((await h.get('/v1/projects/p1/ask', carol)).status, 403);
    await changeOwner(h.stores, 'carol', 'allow');
    assert.equal((await h.get('/v1/projects/p1/ask', carol)).status, 200);
  });

  it('ask appends exactly one event (ask.asked or research.requested) and the list shows it after projecting', async () => {
    const caller = { keyId: 'k-alice', owner: 'alice' };
    const head = await h.stores.log.headPosition();
    const question = await h.services.asks.ask(caller, { handle: 'alpha', question: 'Who backs it?' });
    assert.ok(question.ok);
    assert.ok(askReceiptSchema.safeParse(question.value).success);
    assert.deepEqual({ ...question.value, id: '' }, { id: '', projectId: 'p1', kind: 'question', state: 'queued' });
    const research = await h.services.asks.ask(caller, { handle: 'p1' });
    assert.ok(research.ok);
    assert.equal(research.value.kind, 'research');

    const appended = await h.stores.log.readAll({ afterPosition: head, limit: 10 });
    assert.deepEqual(
      appended.map((e) => [e.stream, e.type]),
      [
        ['project-p1', 'ask.asked'],
        ['project-p1', 'research.requested'],
      ],
    );
    assert.deepEqual(appended[0]!.data, {
      projectId: 'p1',
      askId: question.value.id,
      question: 'Who backs it?',
      owner: 'alice',
      at: NOW.toISOString(),
    });
    assert.deepEqual(appended[1]!.data, {
      projectId: 'p1',
      requestId: research.value.id,
      owner: 'alice',
      at: NOW.toISOString(),
    });

    await h.stores.catchUp();
    const asks = (await h.get('/v1/projects/p1/ask', alice)).json().asks;
    // Same askedAt (fixed clock): ordered by id, descending; the desk's ask (askedAt null, first heard of earlier) last.
    const expected = [
      {
        id: question.value.id,
        question: 'Who backs it?',
        askedAt: NOW.toISOString(),
        status: 'queued',
        answer: null,
        answeredAt: null,
      },
      {
        id: research.value.id,
        question: null,
        askedAt: NOW.toISOString(),
        status: 'queued',
        answer: null,
        answeredAt: null,
      },
    ].sort((a, b) => (a.id < b.id ? 1 : -1));
    assert.deepEqual(asks.slice(0, 2), expected);
    assert.equal(asks[2].id, 'desk-1');
  });

  it('refuses bad asks with a clear error and appends nothing', async () => {
    const head = await h.stores.log.headPosition();
    const alice_ = { keyId: 'k-alice', owner: 'alice' };
    const cases: [unknown, { keyId: string; owner: string }, number, string][] = [
      [{ handle: 'p1', question: '   ' }, alice_, 400, "parameter 'question' must not be blank"],
      [
        { handle: 'p1', question: 'x'.repeat(4001) },
        alice_,
        400,
        "parameter 'question' is invalid: Too big: expected string to have <=4000 characters",
      ],
      [{ handle: 'p1', extra: 1 }, alice_, 400, "unknown parameter 'extra'"],
      [{}, alice_, 400, "parameter 'handle' is invalid: Invalid input: expected string, received undefined"],
      [{ handle: 'nobody', question: 'Hi?' }, alice_, 404, "no project with id or handle 'nobody'"],
      [{ handle: 'p1', question: 'Hi?' }, { keyId: 'k-bob', owner: 'bob' }, 403, ''],
    ];
    for (const [input, caller, status, message] of cases) {
      const result = await h.services.asks.ask(caller, input);
      assert.ok(!result.ok);
      assert.equal(result.error.status, status);
      if (message) assert.equal(result.error.message, message);
    }
    assert.equal(await h.stores.log.headPosition(), head);
  });
});
