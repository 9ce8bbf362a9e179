/**
 * Issue 61, item 4: every repository path the guides name exists, so a recipe followed step by step
 * never sends its reader to a file that is not there. A path is a backticked span, a link target or a
 * bare word under one of the repository's top-level folders; URLs, globs and placeholders are not paths.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const GUIDES = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
/** Made at run time, not kept in the repository: the data directory, the manifest an export writes. */
const RUNTIME = [/^data\//, /^manifest\.json$/];
const EXTENSIONS = /\.(ts|js|mjs|md|json|ya?ml|sql|ndjson|txt|sh)$/;
const TOP_LEVEL = new Set(readdirSync(ROOT).filter((name) => name !== 'node_modules' && name !== '.git'));
const placeholder = (path: string) => /[<>*{}…$|]|\.\.\.|:\/\//.test(path);

/** Every file under the repository, by base name: a bare file name (`sse.ts`) must name one of them. */
function baseNames(dir = ROOT, out = new Set<string>()): Set<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === '.git') continue;
    if (entry.isDirectory()) baseNames(join(dir, entry.name), out);
    else out.add(entry.name);
  }
  return out;
}
const FILES = baseNames();

/** The repository paths a guide names, each with the path it resolves to from the repository's root. */
function namedPaths(guide: string, text: string): { named: string; resolved: string }[] {
  const found: { named: string; resolved: string }[] = [];
  const consider = (raw: string, fromGuide: boolean) => {
    const named = raw
      .replace(/#.*$/, '')
      .replace(/[.,;:)]+$/, '')
      .replace(/:\d+(-\d+)?$/, '');
    if (!named || /\s/.test(named) || named.startsWith('/') || placeholder(raw)) return;
    const top = named.split('/')[0]!;
    const isPath = named.includes('/') ? TOP_LEVEL.has(top) || EXTENSIONS.test(named) : EXTENSIONS.test(named);
    if (!isPath) return;
    // A link is relative to its guide; a backticked or bare path to the repository's root.
    const resolved = fromGuide ? relative(ROOT, join(ROOT, dirname(guide), named)) : named;
    found.push({ named, resolved });
  };
  for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) consider(m[1]!, true);
  for (const m of text.matchAll(/`([^`\n]+)`/g)) consider(m[1]!, false);
  const prose = text
    .replace(/```[\s\S]*?```/g, '')
    .replace(/`[^`\n]*`/g, '')
    .replace(/\]\([^)]*\)/g, ']');
  for (const m of prose.matchAll(/(?<![\w./-])((?:\.?[A-Za-z][\w.-]*\/)+[\w.-]*)/g)) {
    // In prose only a file name or a folder (`events/s` is a unit).
    const word = m[1]!.replace(/\.+$/, '');
    if (TOP_LEVEL.has(word.split('/')[0]!) && (EXTENSIONS.test(word) || word.endsWith('/'))) consider(word, false);
  }
  return found;
}

function exists({ named, resolved }: { named: string; resolved: string }): boolean {
  if (RUNTIME.some((r) => r.test(resolved))) return true;
  if (!named.includes('/')) return FILES.has(named);
  return existsSync(join(ROOT, resolved));
}

describe('the guides name only paths that exist', () => {
  it('finds paths in backticks, links and prose, and leaves out URLs, globs and placeholders', () => {
    const sample =
      'See `mcp/tools.ts`, [scale](scale.md#what-breaks-first), `sse.ts` and test/docs/x.test.ts. ' +
      'not `service/requests/<area>.ts`, `test/support/*-fake.ts`, `application/json` or https://a.example/b.ts.';
    assert.deepEqual(
      namedPaths('docs/guide.md', sample).map((p) => p.resolved),
      ['docs/scale.md', 'mcp/tools.ts', 'sse.ts', 'test/docs/x.test.ts'],
    );
    assert.equal(exists({ named: 'mcp/no-such-file.ts', resolved: 'mcp/no-such-file.ts' }), false);
    assert.equal(exists({ named: 'no-such-file.ts', resolved: 'no-such-file.ts' }), false);
  });

  for (const guide of GUIDES) {
    it(guide, () => {
      const missing = namedPaths(guide, readFileSync(join(ROOT, guide), 'utf8'))
        .filter((p) => !exists(p))
        .map((p) => p.named);
      assert.deepEqual([...new Set(missing)], [], `${guide} names paths that do not exist`);
    });
  }
});
