/**
 * `npm run coverage` (vitest --mode coverage): after the per-folder table, names the source files
 * whose line or branch coverage is under 60 %, the ones a new test would help most.
 */
import { relative } from 'node:path';
import type { Reporter } from 'vitest/node';

const FLOOR = 60;

type Summary = { lines: { pct: number }; branches: { pct: number } };
type CoverageMap = { files(): string[]; fileCoverageFor(file: string): { toSummary(): Summary } };

export default class LowCoverageReporter implements Reporter {
  private low: string[] = [];

  onCoverage(coverage: unknown): void {
    const map = coverage as CoverageMap;
    this.low = map
      .files()
      .map((file) => ({ file: relative(process.cwd(), file), summary: map.fileCoverageFor(file).toSummary() }))
      .filter(({ summary }) => summary.lines.pct < FLOOR || summary.branches.pct < FLOOR)
      .sort((a, b) => a.summary.lines.pct - b.summary.lines.pct)
      .map(
        ({ file, summary }) =>
          `   ${summary.lines.pct.toFixed(1).padStart(5)} % lines  ${summary.branches.pct.toFixed(1).padStart(5)} % branches  ${file}`,
      );
  }

  onTestRunEnd(): void {
    if (this.low.length === 0) return;
    process.stdout.write(
      `\n Files under ${FLOOR} % line or branch coverage (${this.low.length}):\n${this.low.join('\n')}\n`,
    );
  }
}
