/**
 * Progress of a long command on stderr. On a terminal: one line rewritten in place (percentage,
 * rate, time left) a few times a second. Anywhere else (a pipe, a log file): a plain line every few
 * seconds, so a log gets a trace instead of a wall of carriage returns. Ctrl-C reports how far the
 * command got. Presentation only: the numbers come from the command. One reporter for every
 * command (the mirror's adds its lag as `detail`).
 */

export type ProgressSample = {
  /** Units done so far (lines read, messages written). */
  done: number;
  /** Share of the whole work done, 0–1, or null when the total is unknown (stdin). */
  fraction: number | null;
};

export type ProgressOptions = {
  label: string;
  /** What `done` counts, plural ("lines", "messages"). */
  unit: string;
  out: { write(text: string): unknown };
  /** A terminal gets the updating line; anything else gets periodic lines. */
  terminal: boolean;
  /** Overrides the default interval (tests, or a log that wants more or fewer lines). */
  intervalMs?: number;
  /** The first report waits one interval too, so a short run prints none (the mirror). */
  quietAtFirst?: boolean;
  /** Appended to each report after a comma (the mirror's lag). */
  detail?: () => string;
  now?: () => number;
};

export type Progress = {
  /** Milliseconds between reports this reporter wants (use it to throttle the source too). */
  intervalMs: number;
  report(sample: ProgressSample): void;
  /** Ends the updating line so what follows starts on a fresh one. */
  end(): void;
  /** How far the command got (without the label), e.g. for the Ctrl-C message. */
  summary(sample: ProgressSample): string;
};

export const TERMINAL_INTERVAL_MS = 250;
export const PIPE_INTERVAL_MS = 5000;

const grouped = (n: number) => Math.round(n).toLocaleString('en-US');

function duration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return 'unknown';
  const s = Math.ceil(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export function createProgress(options: ProgressOptions): Progress {
  const now = options.now ?? Date.now;
  const started = now();
  const intervalMs = options.intervalMs ?? (options.terminal ? TERMINAL_INTERVAL_MS : PIPE_INTERVAL_MS);
  let last = options.quietAtFirst ? started : -Infinity;
  let lineOpen = false;

  const describe = (sample: ProgressSample): string => {
    const seconds = Math.max((now() - started) / 1000, 0.001);
    const rate = `${grouped(sample.done / seconds)} ${options.unit}/s`;
    const parts = [`${grouped(sample.done)} ${options.unit}`, rate];
    if (sample.fraction === null) return parts.join(', ');
    const fraction = Math.min(Math.max(sample.fraction, 0), 1);
    const left = fraction > 0 ? (seconds * (1 - fraction)) / fraction : Number.POSITIVE_INFINITY;
    return `${(fraction * 100).toFixed(1)}% (${parts.join(', ')}), ${fraction > 0 ? `about ${duration(left)} left` : 'time left unknown'}`;
  };

  const reported = (sample: ProgressSample): string =>
    options.detail ? `${describe(sample)}, ${options.detail()}` : describe(sample);

  return {
    intervalMs,
    report(sample) {
      const t = now();
      if (t - last < intervalMs) return;
      last = t;
      if (options.terminal) {
        // \r back to column 0, then erase to the end of the line: the line updates in place.
        options.out.write(`\r${options.label}: ${reported(sample)}\x1b[K`);
        lineOpen = true;
      } else {
        options.out.write(`${options.label}: ${reported(sample)}\n`);
      }
    },
    end() {
      if (lineOpen) options.out.write('\r\x1b[K');
      lineOpen = false;
    },
    summary(sample) {
      return describe(sample);
    },
  };
}
