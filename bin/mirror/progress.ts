/**
 * The mirror's progress on stderr (bin/progress.ts): on a terminal one line rewritten in place (rows,
 * rate, lag); on a pipe or file one line a minute. Lag is how long ago the mirror last held everything
 * the service had written (0 while caught up): the most its rows can be behind.
 */
import { createProgress, TERMINAL_INTERVAL_MS } from '../progress.ts';

export type MirrorProgress = {
  page(rows: number, caughtUp: boolean): void;
  /** A line of its own (a wait, the end), after ending the updating line. */
  line(text: string): void;
  /** Rows and rate so far, e.g. for the last line. */
  summary(): string;
};

const PIPE_INTERVAL_MS = 60_000;

export function createMirrorProgress(options: {
  out: { write(text: string): unknown };
  terminal: boolean;
  intervalMs?: number;
  now?: () => number;
}): MirrorProgress {
  const now = options.now ?? Date.now;
  const started = now();
  let rows = 0;
  let caughtUpAt: number | null = null;
  let caughtUp = false;
  const lagSeconds = () => (caughtUp ? 0 : (now() - (caughtUpAt ?? started)) / 1000);
  const progress = createProgress({
    label: 'mirror',
    unit: 'rows',
    out: options.out,
    terminal: options.terminal,
    intervalMs: options.intervalMs ?? (options.terminal ? TERMINAL_INTERVAL_MS : PIPE_INTERVAL_MS),
    quietAtFirst: true,
    detail: () => `lag ${Math.ceil(lagSeconds())} s${caughtUp ? ' (caught up, following)' : ''}`,
    now,
  });
  const sample = () => ({ done: rows, fraction: null });

  return {
    page(count, isCaughtUp) {
      rows += count;
      caughtUp = isCaughtUp;
      if (isCaughtUp) caughtUpAt = now();
      progress.report(sample());
    },
    line(text) {
      progress.end();
      options.out.write(`${text}\n`);
    },
    summary: () => progress.summary(sample()),
  };
}
