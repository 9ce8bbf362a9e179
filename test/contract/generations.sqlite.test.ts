import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GenerationSpace } from '../../readmodels/generations/port.ts';
import { createSqliteGenerationSpace } from '../../readmodels/sqlite/generations.ts';
import { generationSpaceContract } from './generations.contract.ts';

const GENERATIONS_MODULE = new URL('../../readmodels/sqlite/generations.ts', import.meta.url).href;

async function killLockHolder(dir: string): Promise<void> {
  const script = `import { acquireReplayLock } from ${JSON.stringify(GENERATIONS_MODULE)};
const lock = acquireReplayLock(${JSON.stringify(dir)});
process.stdout.write(lock.ok ? 'held\\n' : 'refused\\n');
setInterval(() => undefined, 1000);`;
  const child = spawn(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const said = await new Promise<string>((resolve) =>
    child.stdout.setEncoding('utf8').once('data', (d: string) => resolve(d.trim())),
  );
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  if (said !== 'held') throw new Error(`the child did not take the lock: ${said}`);
}

// The embedded space has no clock of its own: announcements are not kept, so there is nothing to age.
generationSpaceContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-generations-'));
  const opened: GenerationSpace[] = [];
  const reopen = () => {
    const space = createSqliteGenerationSpace(dir);
    opened.push(space);
    return space;
  };
  return {
    space: reopen(),
    reopen,
    // A real process takes the lock and is SIGKILLed holding it.
    plantDeadLock: () => killLockHolder(dir),
    async dispose() {
      for (const space of opened) await space.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
