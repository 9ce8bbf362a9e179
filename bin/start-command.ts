import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The flag `npm start` passes to hide node:sqlite's experimental warning; a process starting Node itself passes it too. */
export const NO_WARNING = '--disable-warning=ExperimentalWarning';

/**
 * The environment assignments and Node flags of `npm start` (package.json), read from the script
 * itself: whatever else starts the service (the bench's servers, the container images, checked by
 * test/deploy/compose.test.ts) runs it as `npm start` does, without a second copy of them.
 */
export function startCommand(): { env: Record<string, string>; flags: string[] } {
  const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const env: Record<string, string> = {};
  const flags: string[] = [];
  for (const word of pkg.scripts.start.split(/\s+/)) {
    const assignment = /^([A-Z][A-Z0-9_]*)=(\S*)$/.exec(word);
    if (assignment) env[assignment[1]!] = assignment[2]!;
    else if (word.startsWith('--') && word !== NO_WARNING) flags.push(word);
  }
  return { env, flags };
}
