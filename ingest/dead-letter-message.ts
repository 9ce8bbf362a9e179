/**
 * What a dead letter keeps of a rejected message, by one rule for the NDJSON dead-letter file and the
 * Kafka dead-letter topic: thesis text never leaves the call-record reads, so every `thesisText` is
 * withheld, and a message that cannot be searched reliably is withheld whole when it might hold one.
 */
import { decodeJson } from './messages.ts';

export type DeadLetterMessage = {
  /** The message with every thesisText withheld, its text when it cannot hold one, or a placeholder. */
  message: unknown;
  type: string | null;
  id: string | null;
};

const THESIS_KEY = 'thesisText';

/**
 * Deeper than this, the decoded message is not kept as JSON: the sinks serialise with JSON.stringify,
 * which recurses and would overflow the stack. Source messages are a few levels deep.
 */
export const MAX_KEPT_DEPTH = 1_000;

function withheld(value: unknown): string {
  return typeof value === 'string' ? `[withheld: ${value.length} characters]` : '[withheld]';
}

/** Whether a text may spell thesisText: the word in any case, or any \u escape that could spell it. */
function mightHoldThesis(raw: string): boolean {
  return /thesis/i.test(raw) || /\\u/i.test(raw);
}

/**
 * A copy of a decoded message with the value of every `thesisText` key, at any depth, replaced by a
 * placeholder; undefined when it nests deeper than `maxDepth`. Iterative, so a deeply nested hostile
 * message cannot overflow the stack.
 */
export function withholdThesisText(value: unknown, maxDepth = Infinity): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const root: unknown[] = [value];
  const stack: { source: unknown; target: Record<string, unknown> | unknown[]; key: string | number; depth: number }[] =
    [{ source: value, target: root, key: 0, depth: 1 }];
  while (stack.length > 0) {
    const { source, target, key, depth } = stack.pop()!;
    if (typeof source !== 'object' || source === null) {
      (target as Record<string | number, unknown>)[key] = source;
      continue;
    }
    if (depth > maxDepth) return undefined;
    if (Array.isArray(source)) {
      const copy: unknown[] = new Array<unknown>(source.length);
      (target as Record<string | number, unknown>)[key] = copy;
      source.forEach((item, index) => stack.push({ source: item, target: copy, key: index, depth: depth + 1 }));
      continue;
    }
    // Null prototype: a "__proto__" key from JSON.parse stays a plain key of the copy.
    const copy = Object.create(null) as Record<string, unknown>;
    (target as Record<string | number, unknown>)[key] = copy;
    for (const [name, item] of Object.entries(source)) {
      // Assigned now so the copy keeps the original key order; filled in when popped.
      copy[name] = name === THESIS_KEY ? withheld(item) : null;
      if (name !== THESIS_KEY) stack.push({ source: item, target: copy, key: name, depth: depth + 1 });
    }
  }
  return root[0];
}

/**
 * What a dead letter keeps of a rejected message text. A text that is not JSON, or nests too deep to
 * be kept as JSON, is kept as it is only when it cannot hold a thesis, and withheld whole otherwise.
 */
export function deadLetterMessage(raw: string): DeadLetterMessage {
  const decoded = decodeJson(raw);
  if (!decoded.ok) {
    return {
      message: mightHoldThesis(raw) ? `[withheld: unparseable line of ${raw.length} characters]` : raw,
      type: null,
      id: null,
    };
  }
  const value = decoded.value;
  const record =
    typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  const kept = withholdThesisText(value, MAX_KEPT_DEPTH);
  return {
    message:
      kept !== undefined
        ? kept
        : mightHoldThesis(raw)
          ? `[withheld: line of ${raw.length} characters nested deeper than ${MAX_KEPT_DEPTH} levels]`
          : raw,
    type: typeof record['type'] === 'string' ? record['type'] : null,
    id: typeof record['id'] === 'string' ? record['id'] : null,
  };
}
