import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { parseRawMessage } from '../../ingest/messages.ts';
import { example, line } from './examples.ts';

const rules = { followerProvider: 'followerscope' };

describe('a message with several bad fields', () => {
  it('names every bad field of the payload, each with its reason', () => {
    const message = example('project.sighted');
    const result = parseRawMessage(line({ ...message, data: { ...message.data, fol: 'many', name: 42 } }), rules);
    assert.ok(!result.ok);
    assert.equal(result.path, 'data.name, data.fol');
    assert.match(result.reason, /^data\.name: .*number.*; data\.fol: .*string/);
  });

  it('names a bad envelope field and a bad payload field together', () => {
    const message = example('project.sighted');
    const result = parseRawMessage(
      line({ ...message, at: 'yesterday', data: { ...message.data, fol: 'many' } }),
      rules,
    );
    assert.ok(!result.ok);
    assert.equal(result.path, 'at, data.fol');
  });

  it('keeps a single problem as it was', () => {
    const message = example('project.sighted');
    const result = parseRawMessage(line({ ...message, data: { ...message.data, fol: 'many' } }), rules);
    assert.ok(!result.ok);
    assert.equal(result.path, 'data.fol');
    assert.doesNotMatch(result.reason, /data\.fol/);
  });
});
