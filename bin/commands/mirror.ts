import { createClient } from '../../client/index.ts';
import { parseStrict, printHelp, usageError } from '../args.ts';
import { follow } from '../mirror/follow.ts';
import { createMirrorProgress } from '../mirror/progress.ts';
import { openSqliteMirrorThread } from '../mirror/sqlite-thread.ts';
import {
  CURSOR_TABLE,
  MIRROR_TABLE,
  parseTarget,
  redactedUrl,
  type MirrorStore,
  type StoreTarget,
} from '../mirror/store.ts';

const USAGE = `usage: pulseboard mirror --url URL --key KEY --to sqlite:FILE|postgres://… [--once] [--limit N] [--wait S]

Mirrors the board of a running pulseboard into SQLite or PostgreSQL through the REST delta: from the
stored cursor (or the beginning), page by page, each page's rows upserted by id and the cursor
written in the same transaction (up to 1,000 rows of consecutive pages in one while catching up),
so a crash at any moment neither loses nor repeats anything; then
it follows new writes with long-polls. 429 and 503 are waited out as Retry-After says, a lost
server is waited for. Progress goes to stderr.

  --url URL     the service, e.g. http://127.0.0.1:8080 (without /v1)
  --key KEY     an API key (pbk_…); default: the PULSEBOARD_KEY environment variable
  --to TARGET   sqlite:FILE (its folder must exist) or postgres://user@host:port/db
                (tables in the first schema of the search_path; ?options=-c%20search_path%3Dname
                picks another)
  --once        stop once caught up instead of following
  --limit N     rows per page, 1 to 100 (default 100)
  --wait S      long-poll seconds while following, 1 to 30 (default 30)

Tables (created on first run): ${MIRROR_TABLE} (id primary key, project: the Project JSON as served;
in PostgreSQL project_json holds it as text and project as jsonb, NULL where jsonb cannot hold it;
written_at: when the mirror wrote the row, seq: the mirror's change number, growing with every row it
writes) and ${CURSOR_TABLE} (one row: the cursor, the last seq, the source URL). A lost PostgreSQL
connection is reconnected with backoff and the walk resumed from the stored cursor.
SIGINT or SIGTERM finishes the page in hand and exits 0; run it again to resume.
Exit status: 0 caught up (--once) or stopped, 1 failed along the way, 2 usage error or a wrong
URL, key or store.
`;

const LONG_WAIT_SECONDS = 5;

function whole(value: string | undefined, name: string, min: number, max: number, fallback: number): number | string {
  if (value === undefined) return fallback;
  const n = Number(value);
  return /^\d+$/.test(value) && n >= min && n <= max ? n : `--${name} must be a whole number from ${min} to ${max}`;
}

/** node-postgres is loaded only for a PostgreSQL store. */
async function openStore(
  target: StoreTarget,
  signal: AbortSignal,
  onLost: (reason: string, seconds: number) => void,
): Promise<MirrorStore> {
  if (target.kind === 'sqlite') return openSqliteMirrorThread(target.file);
  const { openPostgresMirror } = await import('../mirror/postgres.ts');
  return openPostgresMirror(target.url, { signal, onLost });
}

export async function run(args: string[]): Promise<number> {
  const parsed = parseStrict({
    args,
    options: {
      url: { type: 'string' },
      key: { type: 'string' },
      to: { type: 'string' },
      once: { type: 'boolean' },
      limit: { type: 'string' },
      wait: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: false,
  });
  if (!parsed.ok) return usageError('mirror', parsed.reason);
  const values = parsed.parsed.values;
  if (values.help) return printHelp(USAGE);
  if (!values.url) return usageError('mirror', '--url URL is required, e.g. --url http://127.0.0.1:8080');
  if (!/^https?:\/\/[^\s/]+/.test(values.url) || !URL.canParse(values.url))
    return usageError('mirror', '--url must be an http:// or https:// URL');
  const key = values.key ?? process.env['PULSEBOARD_KEY'];
  if (!key) return usageError('mirror', '--key KEY is required (or set PULSEBOARD_KEY)');
  if (!values.to) return usageError('mirror', '--to is required: sqlite:FILE or postgres://…');
  const target = parseTarget(values.to);
  if ('reason' in target) return usageError('mirror', target.reason);
  const limit = whole(values.limit, 'limit', 1, 100, 100);
  if (typeof limit === 'string') return usageError('mirror', limit);
  const wait = whole(values.wait, 'wait', 1, 30, 30);
  if (typeof wait === 'string') return usageError('mirror', wait);

  // The service's root: a URL ending in /v1 (as the REST paths are printed) means the same service.
  const url = values.url.replace(/\/+$/, '').replace(/\/v1$/, '');
  const where = target.kind === 'sqlite' ? values.to : redactedUrl(target.url);
  const stop = new AbortController();
  const progress = createMirrorProgress({ out: process.stderr, terminal: process.stderr.isTTY === true });
  const onLost = (reason: string, seconds: number) =>
    progress.line(`mirror: the store's connection was lost (${reason}); reconnecting in ${seconds} s`);
  let store: MirrorStore;
  try {
    store = await openStore(target, stop.signal, onLost);
  } catch (error) {
    process.stderr.write(
      `pulseboard mirror: cannot use the store ${where}: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return 2;
  }

  const onSignal = () => stop.abort();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const startState = await store.state();
    // Said once the service has answered, so that a wrong URL or key is a single line.
    let announced = false;
    const announce = () => {
      if (announced) return;
      announced = true;
      progress.line(
        `mirror: ${url} into ${store.name}, ${startState.cursor === null ? 'from the beginning' : 'from the stored cursor'}`,
      );
    };
    const end = await follow({
      client: createClient({
        baseUrl: url,
        key,
        // Short waits (a lost connection retried) pass silently; a long one is said, once.
        onWait: (error, seconds) => {
          if (seconds >= LONG_WAIT_SECONDS)
            progress.line(`mirror: ${error.code}; waiting ${Math.ceil(seconds)} s as the service asks`);
        },
      }),
      store,
      source: url,
      once: values.once === true,
      limit,
      wait,
      signal: stop.signal,
      onPage: ({ rows, caughtUp }) => {
        announce();
        progress.page(rows, caughtUp);
      },
      onRetry: (error, seconds) =>
        progress.line(`mirror: ${error.code} (${error.message}); resuming from the stored cursor in ${seconds} s`),
    });
    if (!end.ok) {
      const hint = !end.beforeFirstPage
        ? '; the stored cursor is kept: run again to resume'
        : end.status === 401 || end.status === 403
          ? ' (check --key)'
          : ` (check --url: is ${url} a pulseboard service?)`;
      progress.line(`pulseboard mirror: ${end.message}${hint}`);
      return end.beforeFirstPage ? 2 : 1;
    }
    announce();
    progress.line(
      `mirror: ${end.end === 'caught_up' ? 'caught up' : 'stopped'}; ${progress.summary()} this run, ${end.state.seq} changes in all`,
    );
    return 0;
  } catch (error) {
    progress.line(
      `pulseboard mirror: the store ${where} failed: ${error instanceof Error ? error.message : String(error)}; the stored cursor is kept`,
    );
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await store.close().catch(() => {});
  }
}
