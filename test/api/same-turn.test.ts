/**
 * On the embedded stores a read whose key, budget and body are in hand is answered in the turn it
 * arrived in: the key check, the rate gate, a kept body and a kept MCP result come back as values,
 * not promises (readmodels/awaitable.ts). A change (a revoked key, a commit) still goes to the store
 * and is seen by the next request.
 */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { andThen, settledOrRejected } from '../../readmodels/awaitable.ts';
import { issueKey, revokeKey } from '../../service/access.ts';
import { day } from '../support/events.ts';
import { createHarness, type Harness } from '../support/harness.ts';

async function sight(h: Harness, id: string, name: string) {
  await h.append('project.sighted', `s-${id}-${name}`, `project-${id}`, { projectId: id, at: day(1), handle: `h_${id}`, name });
  await h.stores.catchUp();
}

describe('andThen and settledOrRejected', () => {
  it('calls on at once with a value, after settling with a promise, and turns a throw into a rejection', async () => {
    const order: string[] = [];
    const now = andThen(2, (n) => {
      order.push('now');
      return n * 2;
    });
    order.push('after now');
    assert.equal(now, 4);
    const later = andThen(Promise.resolve(2), (n) => {
      order.push('later');
      return n * 2;
    });
    order.push('after later');
    assert.ok(later instanceof Promise);
    assert.equal(await later, 4);
    assert.deepEqual(order, ['now', 'after now', 'after later', 'later']);

    assert.equal(settledOrRejected(() => 7), 7);
    const failed = settledOrRejected(() => {
      throw new Error('store gone');
    });
    assert.ok(failed instanceof Promise);
    await assert.rejects(failed, /store gone/);
  });
});

describe('a kept read in the turn it arrived in (embedded stores)', () => {
  let h: Harness;
  let key: string;
  beforeAll(async () => {
    h = await createHarness();
    key = await h.key('reader');
    await sight(h, 'p1', 'Project 1');
  });
  afterAll(() => h.close());

  it('admits a known key, and answers a kept project and board page as values', async () => {
    // The first reads fetch the key document and keep the bodies (a body is kept from its second read).
    for (let i = 0; i < 2; i++) {
      assert.equal((await h.get('/v1/projects/p1', key)).status, 200);
      assert.equal((await h.get('/v1/projects?page=1', key)).status, 200);
    }
    const admission = h.services.guard.admit(`Bearer ${key}`, 'basic');
    assert.ok(!(admission instanceof Promise), 'the key check and the budget answer at once');
    assert.ok(admission.ok);
    assert.equal(admission.value.headers['ratelimit-limit'], '1000000');
    const caller = admission.value.caller;

    const project = h.services.projects.getRendered(caller, { handle: 'p1' }, {});
    assert.ok(!(project instanceof Promise), 'a kept project is a value');
    assert.ok(project.ok);
    assert.equal(JSON.parse(project.value.json()).project.id, 'p1');

    const board = h.services.projects.listRendered({ page: '1' });
    assert.ok(!(board instanceof Promise), 'a kept board page is a value');
    assert.ok(board.ok);
    assert.equal(JSON.parse(board.value.json()).total, 1);

  });

  it('reads the store again after a commit: the next read is a promise with the new bytes', async () => {
    const caller = { keyId: 'k', owner: 'reader' };
    assert.ok(!(h.services.projects.getRendered(caller, { handle: 'p1' }, {}) instanceof Promise));
    await sight(h, 'p1', 'Renamed');
    const next = h.services.projects.getRendered(caller, { handle: 'p1' }, {});
    assert.ok(next instanceof Promise, 'a changed checkpoint misses the kept body');
    const read = await next;
    assert.ok(read.ok);
    assert.equal(JSON.parse(read.value.json()).project.name, 'Renamed');
  });

  it('refuses a key revoked since it was kept, on the next request', async () => {
    const issued = await issueKey(h.stores, 'leaving');
    const first = await h.services.guard.admit(`Bearer ${issued.key}`, 'basic');
    assert.ok(first.ok);
    const kept = h.services.guard.admit(`Bearer ${issued.key}`, 'basic');
    assert.ok(!(kept instanceof Promise) && kept.ok, 'kept while the keys checkpoint holds');
    assert.ok((await revokeKey(h.stores, issued.keyId)).ok);
    const after = await h.services.guard.admit(`Bearer ${issued.key}`, 'basic');
    assert.ok(!after.ok);
    assert.equal(after.refused.error.status, 401);
  });
});
