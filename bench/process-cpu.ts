/**
 * CPU time one process has used (Linux /proc/<pid>/stat: user + system, all its threads), for a
 * bench's "server CPU a request": the cost of a request in the server alone, which the load
 * generator sharing the machine moves far less than it moves req/s.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Clock ticks a second (USER_HZ), as /proc counts them. */
const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** Microseconds of CPU the process has used so far, or null where /proc cannot say. */
export function processCpuMicros(pid: number): number | null {
  try {
    // The command name (field 2) may hold spaces: the fields after it follow its closing parenthesis.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ', 2)[1]!.split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? (ticks * 1e6) / TICKS_PER_SECOND : null;
  } catch {
    return null;
  }
}
