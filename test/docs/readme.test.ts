/**
 * Issue 18, item 6: the README tells the truth about configuration and Node. Its configuration
 * table documents exactly the variables the configuration schema reads, with their defaults; the
 * Node version it states is the `engines` range, and that range is one every installed package
 * accepts, so `npm ci` on such a Node prints no EBADENGINE warning.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { configSchema, parseConfig } from '../../config/config.ts';

const ROOT = join(import.meta.dirname, '../..');
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const semver = createRequire(import.meta.url)('semver') as {
  subset: (range: string, superset: string) => boolean;
  minVersion: (range: string) => { major: number } | null;
};

/** Rows of the table under "## Configuration": the variables named in its first cell, and its default cell. */
function configurationRows(): { names: string[]; defaults: string }[] {
  const section = readme.split(/^## Configuration$/m)[1]?.split(/^## /m)[0] ?? '';
  return section
    .split('\n')
    .filter((line) => /^\| `[A-Z_]+`/.test(line))
    .map((line) => {
      const cells = line.split('|').map((c) => c.trim());
      return { names: [...cells[1]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!), defaults: cells[2]! };
    });
}

describe('README.md', () => {
  it('documents every configuration variable, and only those', () => {
    const documented = configurationRows().flatMap((row) => row.names);
    assert.deepEqual([...documented].sort(), Object.keys(configSchema.shape).sort());
  });

  it('states each default the schema applies', () => {
    const parsed = parseConfig({});
    assert.ok(parsed.ok);
    for (const row of configurationRows()) {
      for (const name of row.names) {
        const value = parsed.config[name as keyof typeof parsed.config];
        if (value === undefined) assert.match(row.defaults, /unset/, `${name}: no default, so the README says unset`);
        else
          assert.ok(
            row.defaults.includes(`\`${String(value)}\``),
            `${name}: default ${String(value)} in "${row.defaults}"`,
          );
      }
    }
  });

  it('states the Node version engines claims, and every installed package accepts that range', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
    const minimum = semver.minVersion(manifest.engines.node);
    assert.ok(minimum);
    assert.match(readme, new RegExp(`needs Node ${minimum.major} or later`));
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { engines?: unknown; optional?: boolean }>;
    };
    const refusing = Object.entries(lock.packages)
      .filter(([path, entry]) => path !== '' && !entry.optional)
      .flatMap(([path, entry]) => {
        const node =
          typeof entry.engines === 'object' && entry.engines !== null
            ? (entry.engines as { node?: string }).node
            : undefined;
        return node !== undefined && !semver.subset(manifest.engines.node, node) ? [`${path} wants node ${node}`] : [];
      });
    assert.deepEqual(refusing, [], `engines.node ${manifest.engines.node} includes versions these packages refuse`);
  });
});
