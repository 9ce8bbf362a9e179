/**
 * Prints, before vitest's summary, why tests were skipped: one line per reason with how many tests
 * and which files (the reason comes from skipFor() in the task meta, or from ctx.skip(note)).
 * node:test's spec reporter printed the reason on every skipped test; one line per reason is
 * enough to see that the skips are the honest ones (no Docker engine, no chromium, ...).
 */
import type { Reporter, TestModule } from 'vitest/node';

export default class SkipReasonsReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const reasons = new Map<string, { tests: number; files: Set<string> }>();
    for (const module of testModules) {
      for (const test of module.children.allTests('skipped')) {
        const result = test.result();
        const reason =
          test.meta().skipReason ?? (result.state === 'skipped' ? result.note : undefined) ?? 'no reason given';
        const entry = reasons.get(reason) ?? { tests: 0, files: new Set<string>() };
        entry.tests += 1;
        entry.files.add(module.relativeModuleId);
        reasons.set(reason, entry);
      }
    }
    if (reasons.size === 0) return;
    const lines = [...reasons].map(
      ([reason, { tests, files }]) => ` ↓ ${tests} skipped: ${reason}\n     in ${[...files].sort().join(', ')}`,
    );
    process.stdout.write(`\n Skipped tests, by reason:\n${lines.join('\n')}\n`);
  }
}
