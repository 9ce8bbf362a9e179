/**
 * Issue 18, item 3: a new user opens /docs in a browser, enters the key once under "Authorize",
 * sends GET /v1/projects from the page and sees a 200 with projects. Debian's chromium, driven by
 * playwright-core; every request the page makes must stay on this origin (the assets are bundled,
 * so the page works offline). Skipped, saying why, only when /usr/bin/chromium is absent
 * (.ci/run installs it).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { skipFor } from '../support/skip.ts';
import { chromium, type Browser } from 'playwright-core';
import { CLI } from '../support/cli.ts';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is absent (Debian package chromium; .ci/run installs it)`;

describe('the /docs page in a headless browser', skipFor(skip), () => {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-docs-browser-'));
  let server: ChildProcess;
  let browser: Browser;
  let url = '';
  let key = '';

  beforeAll(async () => {
    server = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', CLI, 'serve'], {
      env: {
        PATH: process.env['PATH'] ?? '',
        PULSEBOARD_DATA_DIR: join(dir, 'data'),
        PORT: '0',
        PULSEBOARD_LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    for await (const line of createInterface({ input: server.stdout! })) {
      const listening = /listening on (http:\/\/\S+)\/v1/.exec(line);
      if (listening) url = listening[1]!;
      if (/^pbk_[A-Za-z0-9_-]{43}$/.test(line)) key = line;
      if (url && key) break;
    }
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });

  afterAll(async () => {
    await browser?.close();
    if (server && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('enters a key once, sends GET /v1/projects from the page and sees a 200 with projects', async () => {
    assert.ok(url && key, 'serve printed its URL and a key');
    const page = await browser.newPage();
    const elsewhere: string[] = [];
    const failures: string[] = [];
    await page.route('**/*', async (route) => {
      if (new URL(route.request().url()).origin === new URL(url).origin) return route.continue();
      elsewhere.push(route.request().url());
      return route.abort();
    });
    page.on('pageerror', (error) => failures.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') failures.push(message.text());
    });

    await page.goto(`${url}/docs`);
    await page.locator('.info .title', { hasText: 'pulseboard read API' }).waitFor();

    // Authorize once: the bearer key goes with every request sent from the page.
    await page.locator('.auth-wrapper button.authorize').click();
    await page.locator('.modal-ux input').first().fill(key);
    await page.locator('.modal-ux button[type=submit]', { hasText: 'Authorize' }).click();
    await page.locator('.modal-ux button', { hasText: 'Close' }).click();

    const operation = page.locator('#operations-projects-listProjects');
    await operation.locator('.opblock-summary').first().click();
    const sent = page.waitForResponse((response) => new URL(response.url()).pathname === '/v1/projects');
    await operation.locator('button.execute').click();
    const response = await sent;
    assert.equal(response.status(), 200);
    assert.equal(response.request().headers()['authorization'], `Bearer ${key}`);

    // And the page shows it: the live response's status and a body with projects.
    const live = operation.locator('.live-responses-table tbody .response');
    await live.locator('.response-col_status', { hasText: '200' }).waitFor();
    const body = JSON.parse(
      (await live.locator('.response-col_description pre.microlight').first().textContent()) ?? '',
    ) as { projects: { id: string }[] };
    assert.ok(body.projects.length > 0, 'projects on the page');
    assert.ok(body.projects.every((p) => typeof p.id === 'string'));

    assert.deepEqual(elsewhere, [], 'the page fetched nothing from another origin');
    assert.deepEqual(failures, [], 'no script errors (a CSP refusal would show here)');
    await page.close();
  });
});
