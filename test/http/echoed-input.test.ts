/** Error messages that repeat caller input repeat at most 100 characters of it, escaped. */
import assert from 'node:assert/strict';
import { afterAll, beforeAll, it } from 'vitest';
import { echoed } from '../../service/errors.ts';
import { createHarness, type Harness } from '../support/harness.ts';

let h: Harness;
let key: string;
beforeAll(async () => {
  h = await createHarness();
  key = await h.key('reader');
});
afterAll(() => h.close());

it("echoed: the first 100 characters, then …; anything but printable ASCII, \\ and ' as \\uXXXX", () => {
  assert.equal(echoed('plain-handle_1'), 'plain-handle_1');
  assert.equal(echoed('x'.repeat(150)), `${'x'.repeat(100)}…`);
  assert.equal(echoed("a'b\\c\u0000é\u2028"), 'a\\u0027b\\u005cc\\u0000\\u00e9\\u2028');
});

it('an unknown route and an unknown project echo a bounded, escaped input', async () => {
  const long = `/v2/${'y'.repeat(300)}`;
  const route = await h.get(long, key);
  assert.equal(route.status, 404);
  assert.equal(route.json().error.message, `no such endpoint: GET ${long.slice(0, 100)}…`);
  const project = await h.get(`/v1/projects/${encodeURIComponent(`z'é${'q'.repeat(150)}`)}`, key);
  assert.equal(project.status, 404, project.body);
  assert.equal(project.json().error.message, `no project with id or handle 'z\\u0027\\u00e9${'q'.repeat(97)}…'`);
});
