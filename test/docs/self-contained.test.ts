/**
 * Issue 18, item 1: the repository is self-contained. Every relative link in a Markdown file
 * resolves to a file or folder inside the repository, no tracked file names a document that lives
 * outside it (the former shared spec, design and ingest notes), and no path climbs out of the
 * checkout. Anchors within docs are checked against the target's headings.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const tracked = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
  cwd: ROOT,
  encoding: 'utf8',
})
  .split('\0')
  .filter((f) => f !== '' && existsSync(join(ROOT, f)));
const textFiles = tracked.filter(
  (f) =>
    /\.(md|ts|js|json|ya?ml|ndjson|sh|txt)$|(^|\/)(Dockerfile|run|\.gitignore|\.dockerignore)$/.test(f) &&
    !f.endsWith('package-lock.json'),
);
const markdown = tracked.filter((f) => f.endsWith('.md'));

/** GitHub-style heading anchors of a Markdown file. */
function anchors(file: string): Set<string> {
  const out = new Set<string>();
  for (const [, heading] of readFileSync(file, 'utf8').matchAll(/^#{1,6}\s+(.+)$/gm)) {
    out.add(
      heading!
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    );
  }
  return out;
}

describe('the repository links nothing outside it', () => {
  it('finds the files it checks', () => {
    assert.ok(markdown.includes('README.md') && markdown.includes('docs/api-guide.md'), markdown.join(', '));
  });

  it('every relative Markdown link resolves inside the repository', () => {
    const broken: string[] = [];
    for (const file of markdown) {
      const text = readFileSync(join(ROOT, file), 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) {
          broken.push(`${file}: ${target} (an address outside the repository)`);
          continue;
        }
        const [path, anchor] = target!.split('#') as [string, string | undefined];
        const absolute = path === '' ? join(ROOT, file) : resolve(dirname(join(ROOT, file)), path);
        if (relative(ROOT, absolute).startsWith('..')) broken.push(`${file}: ${target} (leaves the repository)`);
        else if (!existsSync(absolute)) broken.push(`${file}: ${target} (no such file)`);
        else if (anchor && absolute.endsWith('.md') && !anchors(absolute).has(anchor))
          broken.push(`${file}: ${target} (no such heading)`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it('no file names a document outside the repository or a path above it', () => {
    // Section marks of the documents the service was built from (`DESIGN §6`, `spec §4.1`) name them too.
    const outside =
      /\.\.\/shared\b|\bshared\/(spec|DESIGN|INGEST)|\bINGEST\.md\b|\bDESIGN\.md\b|\bread-api\.md\b|\/work\/|\b(DESIGN|spec|INGEST) §/;
    const found: string[] = [];
    for (const file of textFiles) {
      if (file === relative(ROOT, import.meta.filename)) continue;
      readFileSync(join(ROOT, file), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (outside.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
        });
    }
    assert.deepEqual(found, []);
  });
});
