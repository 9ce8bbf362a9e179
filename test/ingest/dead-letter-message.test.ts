import assert from 'node:assert/strict';
import { describe, it } from 'vitest';
import { deadLetterMessage, MAX_KEPT_DEPTH, withholdThesisText } from '../../ingest/dead-letter-message.ts';
import { deeplyNested, THESIS_HIDING_MESSAGES } from './examples.ts';

describe('dead-letter message', () => {
  it('withholds thesisText at any depth and keeps key order', () => {
    const value = {
      a: 1,
      thesisText: 'secret',
      nested: [{ thesisText: 'more secret', b: [1, { thesisText: 5 }] }],
      z: null,
    };
    assert.equal(
      JSON.stringify(withholdThesisText(value)),
      JSON.stringify({
        a: 1,
        thesisText: '[withheld: 6 characters]',
        nested: [{ thesisText: '[withheld: 11 characters]', b: [1, { thesisText: '[withheld]' }] }],
        z: null,
      }),
    );
  });

  it('survives hostile nesting and __proto__ keys', () => {
    const deep = deeplyNested(100_000);
    assert.doesNotThrow(() => withholdThesisText(JSON.parse(deep)));
    // Too deep for JSON.stringify, so kept as its text, which cannot hold a thesis.
    assert.equal(deadLetterMessage(deep).message, deep);
    const kept = deadLetterMessage(deeplyNested(MAX_KEPT_DEPTH)).message;
    assert.ok(Array.isArray(kept), 'a message as deep as the limit is kept as JSON');
    const proto = deadLetterMessage('{"__proto__": {"thesisText": "x"}, "type": "t"}');
    assert.equal(JSON.stringify(proto.message), '{"__proto__":{"thesisText":"[withheld: 1 characters]"},"type":"t"}');
  });

  it('decodes an escaped key before withholding it', () => {
    const kept = deadLetterMessage('{"type":"t","id":"i","data":{"\\u0074hesisText":"abc"}}');
    assert.equal(
      JSON.stringify(kept),
      '{"message":{"type":"t","id":"i","data":{"thesisText":"[withheld: 3 characters]"}},"type":"t","id":"i"}',
    );
  });

  it('keeps a text that does not parse, or nests too deep, only when it cannot hold a thesis', () => {
    assert.equal(deadLetterMessage('{"type": "rival.listed",').message, '{"type": "rival.listed",');
    assert.equal(deadLetterMessage('{"thesisText": "abc"').message, '[withheld: unparseable line of 20 characters]');
    assert.equal(deadLetterMessage('{"THESIS": "abc"').message, '[withheld: unparseable line of 16 characters]');
    // An escaped key could spell thesisText without the word showing.
    assert.equal(
      deadLetterMessage('{"\\u0074hesisText": "abc"').message,
      '[withheld: unparseable line of 25 characters]',
    );
    const deep = `{"\\u0074hesisText":"abc","x":${deeplyNested(MAX_KEPT_DEPTH + 1)}}`;
    assert.equal(
      deadLetterMessage(deep).message,
      `[withheld: line of ${deep.length} characters nested deeper than ${MAX_KEPT_DEPTH} levels]`,
    );
  });

  it('lets no thesis through, and always gives a value JSON.stringify can write', () => {
    for (const raw of THESIS_HIDING_MESSAGES) {
      const text = JSON.stringify(deadLetterMessage(raw));
      assert.doesNotMatch(text, /SECRET/, raw.slice(0, 80));
    }
  });
});
