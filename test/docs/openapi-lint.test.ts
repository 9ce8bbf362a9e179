/**
 * Issue 18, item 3: the served OpenAPI document passes `redocly lint` (recommended rules) and
 * `spectral lint` (oas ruleset) with zero errors and zero warnings. Both linters run from the pinned
 * devDependencies under this Node, offline (Redocly's telemetry and update check are off).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { promisify } from 'node:util';
import { createHarness, type Harness } from '../support/harness.ts';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');
const REDOCLY = join(ROOT, 'node_modules/@redocly/cli/bin/cli.js');
const SPECTRAL = join(ROOT, 'node_modules/@stoplight/spectral-cli/dist/index.js');

async function lint(script: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [script, ...args], {
      cwd: ROOT,
      env: {
        PATH: process.env['PATH'] ?? '',
        REDOCLY_TELEMETRY: 'off',
        REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
        NO_COLOR: '1',
      },
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('the served OpenAPI document under redocly and spectral', () => {
  let h: Harness;
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-openapi-lint-'));
  const file = join(dir, 'openapi.json');

  beforeAll(async () => {
    h = await createHarness();
    const res = await h.get('/v1/openapi.json');
    assert.equal(res.status, 200);
    writeFileSync(file, res.body);
  });
  afterAll(async () => {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('redocly lint (recommended): no errors, no warnings', async () => {
    const result = await lint(REDOCLY, ['lint', file, '--config', join(ROOT, 'redocly.yaml'), '--format', 'json']);
    const report = JSON.parse(result.stdout) as {
      totals: { errors: number; warnings: number };
      problems: { ruleId: string; message: string; location: { pointer: string }[] }[];
    };
    const problems = report.problems.map((p) => `${p.ruleId} at ${p.location[0]?.pointer ?? '?'}: ${p.message}`);
    assert.deepEqual(problems, []);
    assert.deepEqual(report.totals, { ...report.totals, errors: 0, warnings: 0 });
    assert.equal(result.code, 0, result.stderr);
  });

  it('spectral lint (oas ruleset): no errors, no warnings', async () => {
    const result = await lint(SPECTRAL, [
      'lint',
      file,
      '--ruleset',
      join(ROOT, '.spectral.yaml'),
      '--format',
      'json',
      '--fail-severity',
      'warn',
      '--quiet',
    ]);
    const problems = (
      JSON.parse(result.stdout || '[]') as { code: string; message: string; path: string[]; severity: number }[]
    )
      .filter((p) => p.severity <= 1)
      .map((p) => `${p.code} at ${p.path.join('.')}: ${p.message}`);
    assert.deepEqual(problems, []);
    assert.equal(result.code, 0, result.stderr);
  });
});
