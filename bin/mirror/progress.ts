/**
 * The mirror's progress on stderr: on a terminal one line rewritten in place (rows, rate, lag); on a
 * pipe or file one line a minute. Lag is how long ago the mirror last held everything the service had
 * written (0 while caught up): the most its rows can be behind.
 */
export type MirrorProgress = {
  page(rows: number, caughtUp: boolean): void;
  /** A line of its own (a wait, the end), after ending the updating line. */
  line(text: string): void;
  /** Rows and rate so far, e.g. for the last line. */
  summary(): string;
};

const TERMINAL_INTERVAL_MS = 250;
const PIPE_INTERVAL_MS = 60_000;

const grouped = (n: number) => Math.round(n).toLocaleString('en-US');

export function createMirrorProgress(options: {
  out: { write(text: string): unknown };
  terminal: boolean;
  intervalMs?: number;
  now?: () => number;
}) {
  const now = options.now ?? Date.now;
  const started = now();
  const intervalMs = options.intervalMs ?? (options.terminal ? TERMINAL_INTERVAL_MS : PIPE_INTERVAL_MS);
  let rows = 0;
  let caughtUpAt: number | null = null;
  let caughtUp = false;
  let lastReport = started;
  let lineOpen = false;

  const lagSeconds = () => (caughtUp ? 0 : (now() - (caughtUpAt ?? started)) / 1000);
  const summary = () => {
    const seconds = Math.max((now() - started) / 1000, 0.001);
    return `${grouped(rows)} rows, ${grouped(rows / seconds)} rows/s`;
  };
  const describeNow = () =>
    `mirror: ${summary()}, lag ${Math.ceil(lagSeconds())} s${caughtUp ? ' (caught up, following)' : ''}`;

  return {
    page(count: number, isCaughtUp: boolean) {
      rows += count;
      caughtUp = isCaughtUp;
      if (isCaughtUp) caughtUpAt = now();
      const t = now();
      if (t - lastReport < intervalMs) return;
      lastReport = t;
      if (options.terminal) {
        options.out.write(`\r${describeNow()}\x1b[K`);
        lineOpen = true;
      } else {
        options.out.write(`${describeNow()}\n`);
      }
    },
    line(text: string) {
      if (lineOpen) options.out.write('\r\x1b[K');
      lineOpen = false;
      options.out.write(`${text}\n`);
    },
    summary,
  } satisfies MirrorProgress;
}
