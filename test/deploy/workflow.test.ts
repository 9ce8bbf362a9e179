/**
 * Static checks of the GitHub Actions workflow (.github/workflows/ci.yml). It cannot run here; these
 * catch what would only fail on GitHub: YAML that does not parse, a step naming a file or npm script
 * that does not exist, a Node version or server image that drifted from the rest of the repository.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { parse } from 'yaml';
import { images } from '../support/containers.ts';

const root = join(import.meta.dirname, '..', '..');
const workflow = parse(readFileSync(join(root, '.github', 'workflows', 'ci.yml'), 'utf8')) as {
  on?: Record<string, unknown>;
  jobs?: Record<
    string,
    {
      'runs-on'?: string;
      needs?: string;
      env?: Record<string, string>;
      steps?: { uses?: string; run?: string; with?: Record<string, unknown>; env?: Record<string, string> }[];
    }
  >;
};
const scripts = (
  JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
    engines: { node: string };
  }
).scripts;
const jobs = workflow.jobs ?? {};
const steps = Object.values(jobs).flatMap((job) => job.steps ?? []);
const runs = steps.flatMap((step) => (step.run ? [step.run] : []));

describe('GitHub workflow', () => {
  it('runs on pushes and pull requests, with the checks job and the compose job after it', () => {
    assert.ok(workflow.on && 'push' in workflow.on && 'pull_request' in workflow.on);
    assert.deepEqual(Object.keys(jobs).sort(), ['checks', 'compose']);
    assert.equal(jobs.compose!.needs, 'checks');
    for (const job of Object.values(jobs))
      assert.match(job['runs-on'] ?? '', /^ubuntu-/, 'a hosted runner with Docker');
  });

  it('uses Node 24 (package.json engines) in every job, and pins every action to a version', () => {
    const setups = steps.filter((step) => step.uses?.startsWith('actions/setup-node@'));
    assert.equal(setups.length, Object.keys(jobs).length);
    for (const setup of setups) assert.equal(setup.with?.['node-version'], 24);
    for (const step of steps.filter((s) => s.uses)) assert.match(step.uses!, /@v\d+$|@[0-9a-f]{40}$/, step.uses);
  });

  it('names only npm scripts and files that exist', () => {
    for (const run of runs) {
      for (const [, script] of run.matchAll(/npm run ([\w:-]+)/g)) assert.ok(scripts[script!], `npm run ${script}`);
      for (const [path] of run.matchAll(/test\/[\w./-]+\.ts/g)) assert.ok(existsSync(join(root, path)), path);
    }
    assert.ok(runs.includes('npm test'), 'the README test command');
  });

  it('pulls the same server images the tests start, and runs the compose end to end enabled', () => {
    const pulled = runs.flatMap((run) => [...run.matchAll(/docker pull (\S+)/g)].map((m) => m[1]));
    assert.deepEqual(pulled.sort(), Object.values(images).sort());
    const e2e = jobs.compose!.steps!.find((step) => step.run?.includes('test/deploy/compose.e2e.test.ts'));
    assert.equal(e2e?.env?.PULSEBOARD_COMPOSE_E2E, '1');
    const up = jobs.compose!.steps!.findIndex((step) => step.run?.startsWith('docker compose up'));
    const ready = jobs.compose!.steps!.findIndex((step) => step.run?.includes('/readyz'));
    const e2eIndex = jobs.compose!.steps!.indexOf(e2e!);
    assert.ok(
      up >= 0 && up < ready && ready < e2eIndex,
      'start the stack, wait until it is ready, then run the end to end',
    );
    const checks = jobs.checks!.steps!.find((step) => step.run === 'npm test');
    assert.equal(checks?.env?.PULSEBOARD_REQUIRE_DOCKER, '1', 'the server suites may not skip on GitHub');
  });
});
