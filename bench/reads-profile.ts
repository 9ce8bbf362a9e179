/**
 * Profiles one read under load: starts the read bench's app server (bench/reads-server.ts) over a
 * cached data set with --cpu-prof, loads one path with autocannon, stops the server and prints the
 * functions with the most self time. Run under the shared lock:
 *   node bench/reads-profile.ts DATA_DIR PATH [SECONDS] [TOP]
 * e.g. `node bench/reads-profile.ts /tmp/pulseboard-bench-cache/10000-7-30d '/v1/projects?page=1'`;
 * KEEP_PROF=1 keeps the .cpuprofile and prints its path (for an inclusive-time look or DevTools).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

type LoadResult = { requests: { average: number } };
const autocannon = createRequire(import.meta.url)('autocannon') as (options: object) => Promise<LoadResult>;

type ProfileNode = {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
};
type Profile = { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };

const [dataDir, path, secondsArg, topArg] = process.argv.slice(2);
if (!dataDir || !path) {
  process.stderr.write('usage: reads-profile.ts DATA_DIR PATH [SECONDS] [TOP]\n');
  process.exit(2);
}
const seconds = Number(secondsArg ?? '5');
const top = Number(topArg ?? '25');
const key = readFileSync(join(dataDir, 'bench-key.txt'), 'utf8').trim();
const profDir = mkdtempSync(join(tmpdir(), 'pulseboard-prof-'));

const child = spawn(
  process.execPath,
  [
    '--disable-warning=ExperimentalWarning',
    '--cpu-prof',
    `--cpu-prof-dir=${profDir}`,
    join(import.meta.dirname, 'reads-server.ts'),
    'app',
    dataDir,
  ],
  {
    // stdin a pipe: the server ends with it (see reads-server.ts).
    stdio: ['pipe', 'pipe', 'inherit'],
  },
);
const port = await new Promise<number>((resolve, reject) => {
  child.once('exit', (code) => reject(new Error(`server exited (${code})`)));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const match = /^listening (\d+)$/.exec(line);
    if (match) resolve(Number(match[1]));
  });
});
const url = `http://127.0.0.1:${port}${path}`;
const headers = { authorization: `Bearer ${key}` };
if (path === 'mirror') {
  // Delta paging from the start, one page after the other (every page a new cursor), for `seconds`.
  const until = Date.now() + seconds * 1000;
  let pages = 0;
  let next = `http://127.0.0.1:${port}/v1/projects?since=1970-01-01T00:00:00Z&limit=100`;
  while (Date.now() < until) {
    const bytes = Buffer.from(await (await fetch(next, { headers })).arrayBuffer()).toString('utf8', 0);
    const match = /"cursor":"([A-Za-z0-9_-]+)","hasMore":(true|false)/.exec(bytes.slice(-1024));
    pages += 1;
    next =
      match && match[2] === 'true'
        ? `http://127.0.0.1:${port}/v1/projects?cursor=${match[1]}&limit=100`
        : `http://127.0.0.1:${port}/v1/projects?since=1970-01-01T00:00:00Z&limit=100&has_dossier=${pages % 2 === 0}`;
  }
  process.stdout.write(`mirror: ${(pages / seconds).toFixed(0)} pages/s under the profiler\n`);
} else {
  await autocannon({ url, connections: 10, duration: 1, headers });
  const result = await autocannon({ url, connections: 10, duration: seconds, headers });
  process.stdout.write(`${path}: ${result.requests.average.toFixed(0)} req/s under the profiler\n`);
}
await new Promise<void>((resolve) => {
  child.once('exit', () => resolve());
  child.kill('SIGTERM');
});

const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error('no profile written');
const profile = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as Profile;
if (!process.env.KEEP_PROF) rmSync(profDir, { recursive: true, force: true });
else process.stdout.write(`profile ${join(profDir, file)}\n`);
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<string, number>();
let total = 0;
profile.samples.forEach((id, i) => {
  const node = byId.get(id)!;
  const { functionName, url: source, lineNumber } = node.callFrame;
  const where = source ? `${source.replace(/^.*\/(node_modules\/)?/, '')}:${lineNumber + 1}` : '';
  const label = `${functionName || '(anonymous)'} ${where}`.trim();
  const dt = profile.timeDeltas[i] ?? 0;
  self.set(label, (self.get(label) ?? 0) + dt);
  total += dt;
});
const idle = [...self.entries()].filter(([label]) => label.startsWith('(idle)')).reduce((a, [, v]) => a + v, 0);
process.stdout.write(
  `busy ${(((total - idle) / total) * 100).toFixed(1)} % of ${(total / 1e6).toFixed(1)} s; self time, % of busy:\n`,
);
for (const [label, us] of [...self.entries()]
  .filter(([l]) => !l.startsWith('(idle)'))
  .sort((a, b) => b[1] - a[1])
  .slice(0, top)) {
  process.stdout.write(`${((us / (total - idle)) * 100).toFixed(1).padStart(5)} %  ${label}\n`);
}
