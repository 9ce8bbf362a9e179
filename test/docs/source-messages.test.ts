/**
 * docs/source-messages.md is generated from the zod schemas ingest validates with: it must equal
 * what the generator renders now (regenerate with `npm run docs:build`), cover every
 * message type, and its examples must be messages ingest accepts.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'vitest';
import { renderSourceMessages, SOURCE_MESSAGES_FILE } from '../../docs/build/source-messages.ts';
import { sourcePayloads, sourceTypes } from '../../events/source.ts';
import { parseRawMessage } from '../../ingest/messages.ts';

const text = readFileSync(SOURCE_MESSAGES_FILE, 'utf8');

describe('docs/source-messages.md', () => {
  it('is what the generator renders from the current schemas', () => {
    assert.equal(text, renderSourceMessages(), 'stale: run npm run docs:build');
  });

  it('has a section with every field of every message type', () => {
    for (const type of sourceTypes) {
      const section = text.split(`\n### ${type}\n`)[1]?.split('\n### ')[0];
      assert.ok(section, `section for ${type}`);
      const shape = (sourcePayloads[type] as unknown as { shape?: Record<string, unknown> }).shape ?? {};
      for (const field of Object.keys(shape)) assert.ok(section.includes(`| \`${field}\` |`), `${type}: ${field}`);
    }
  });

  it('shows examples that ingest accepts, one per type', () => {
    const examples = [...text.matchAll(/```json\n(.+)\n```/g)].map((m) => m[1]!);
    assert.equal(examples.length, sourceTypes.length + 1, 'the envelope example and one per type');
    for (const line of examples) {
      const parsed = parseRawMessage(line, { followerProvider: 'followerscope' });
      assert.ok(parsed.ok, `${line}: ${parsed.ok ? '' : `${parsed.path} ${parsed.reason}`}`);
    }
    const types = new Set(examples.map((line) => (JSON.parse(line) as { type: string }).type));
    for (const type of sourceTypes) assert.ok(types.has(type), type);
  });
});
