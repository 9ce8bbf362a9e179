import { execFile, spawnSync } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

/**
 * A PostgreSQL primary and a streaming replica of its own (replica reads, the fault test): made with
 * `initdb` and `pg_basebackup` as the `postgres` user in a temporary directory, each on a free port,
 * removed by `remove()`. Needs the server binaries (/usr/lib/postgresql/<v>/bin) and to run as root or
 * as postgres; `pairSkipReason` says why not otherwise (unless PULSEBOARD_REQUIRE_SERVERS=1).
 */
const run = promisify(execFile);

function binDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'pg_basebackup')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? null : join(root, versions[0], 'bin');
}

export function pairSkipReason(): false | string {
  if (process.env['PULSEBOARD_REQUIRE_SERVERS'] === '1') return false;
  if (binDir() === null) return 'needs the PostgreSQL server binaries (/usr/lib/postgresql/<version>/bin)';
  const uid = process.getuid?.();
  if (uid !== 0) return 'needs to run as root (initdb and pg_basebackup run as the postgres user)';
  return false;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export type PostgresNode = {
  port: number;
  /** A URL to database `pulseboard` on 127.0.0.1 (or `host`). */
  url(host?: string): string;
  query<R extends pg.QueryResultRow>(sql: string): Promise<R[]>;
  /** An immediate stop (the server's crash path: no checkpoint, every backend ended). */
  kill(): Promise<void>;
  start(): Promise<void>;
  running(): boolean;
};

export type PostgresPair = {
  primary: PostgresNode;
  replica: PostgresNode;
  /** Stops replaying WAL on the replica (its reads stay at the last replayed commit) / resumes it. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** Resolves once the replica has replayed everything the primary has written so far. */
  caughtUp(): Promise<void>;
  remove(): Promise<void>;
};

export type PairOptions = {
  /** listen_addresses of both servers (default 127.0.0.1; '*' for clients in other network namespaces). */
  listen?: string;
};

async function asPostgres(bin: string, args: string[]): Promise<void> {
  const uid = process.getuid?.();
  if (uid === 0) await run('su', ['postgres', '-s', '/bin/sh', '-c', [bin, ...args].map(shellQuote).join(' ')]);
  else await run(bin, args);
}

const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

export async function createPostgresPair(options: PairOptions = {}): Promise<PostgresPair> {
  const bin = binDir();
  if (bin === null) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
  const dir = mkdtempSync(join(tmpdir(), 'pulseboard-pg-pair-'));
  if (process.getuid?.() === 0) {
    const { uid, gid } = await postgresIds();
    chownSync(dir, uid, gid);
  }
  const listen = options.listen ?? '127.0.0.1';
  const nodes: PostgresNode[] = [];
  const dataOf = new Map<PostgresNode, string>();
  const stopCommand = (n: PostgresNode) =>
    [join(bin, 'pg_ctl'), '-D', dataOf.get(n)!, '-m', 'immediate', 'stop'].map(shellQuote).join(' ');

  const node = (name: string, port: number): PostgresNode => {
    const data = join(dir, name);
    let up = false;
    const url = (host = '127.0.0.1') => `postgres://postgres@${host}:${port}/pulseboard`;
    const settings = [
      `-p ${port}`,
      `-k ${dir}`,
      `-c listen_addresses='${listen}'`,
      '-c fsync=off',
      '-c synchronous_commit=off',
      '-c full_page_writes=off',
      '-c max_connections=200',
      '-c shared_buffers=32MB',
      '-c wal_level=replica',
      '-c max_wal_senders=4',
      '-c hot_standby=on',
      // A query on the replica waits for replay at most this long before replay cancels it.
      '-c max_standby_streaming_delay=5s',
    ].join(' ');
    const created: PostgresNode = {
      port,
      url,
      async query<R extends pg.QueryResultRow>(sql: string) {
        const client = new pg.Client({ connectionString: url(), connectionTimeoutMillis: 5000 });
        await client.connect();
        try {
          return (await client.query<R>(sql)).rows;
        } finally {
          await client.end().catch(() => undefined);
        }
      },
      async kill() {
        if (!up) return;
        up = false;
        await asPostgres(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      },
      async start() {
        await asPostgres(join(bin, 'pg_ctl'), [
          '-D',
          data,
          '-l',
          join(dir, `${name}.log`),
          '-o',
          settings,
          '-w',
          'start',
        ]);
        up = true;
      },
      running: () => up,
    };
    nodes.push(created);
    dataOf.set(created, data);
    return created;
  };

  try {
    const primary = node('primary', await freePort());
    await asPostgres(join(bin, 'initdb'), ['-D', join(dir, 'primary'), '-U', 'postgres', '-A', 'trust', '--no-sync']);
    // Clients on other hosts (network namespaces) too; the replica copies this file.
    if (listen !== '127.0.0.1') appendFileSync(join(dir, 'primary', 'pg_hba.conf'), 'host all all 0.0.0.0/0 trust\n');
    await primary.start();
    await asPostgres(join(bin, 'createdb'), ['-h', dir, '-p', String(primary.port), '-U', 'postgres', 'pulseboard']);
    const replica = node('replica', await freePort());
    await asPostgres(join(bin, 'pg_basebackup'), [
      ...['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres'],
      ...['-D', join(dir, 'replica'), '-R', '-X', 'stream', '--no-sync', '-c', 'fast'],
    ]);
    await replica.start();
    // A test ended by its timeout leaves no server running: stopped (and removed) as this process exits.
    const atExit = () => {
      for (const n of nodes) if (n.running()) spawnSync('su', ['postgres', '-s', '/bin/sh', '-c', stopCommand(n)]);
      rmSync(dir, { recursive: true, force: true });
    };
    process.once('exit', atExit);
    const lsnReached = async () => {
      const [p] = await primary.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
      // A loaded machine can refuse a connection now and then: asked again, for at most a minute.
      for (const deadline = Date.now() + 60_000; ;) {
        const behind = await replica
          .query<{ behind: boolean }>(`SELECT pg_last_wal_replay_lsn() < '${p!.lsn}'::pg_lsn AS behind`)
          .then(
            ([r]) => r!.behind,
            (error: unknown) => {
              if (Date.now() > deadline) throw error;
              return true;
            },
          );
        if (!behind) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    return {
      primary,
      replica,
      pauseReplay: async () => void (await replica.query('SELECT pg_wal_replay_pause()')),
      resumeReplay: async () => void (await replica.query('SELECT pg_wal_replay_resume()')),
      caughtUp: lsnReached,
      async remove() {
        process.removeListener('exit', atExit);
        for (const n of nodes) await n.kill();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    for (const n of nodes) await n.kill();
    const log = ['primary', 'replica']
      .map((n) => join(dir, `${n}.log`))
      .filter((f) => existsSync(f))
      .map((f) => readFileSync(f, 'utf8').slice(-2000))
      .join('\n');
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`could not make a PostgreSQL primary and replica: ${String(error)}\n${log}`, { cause: error });
  }
}

async function postgresIds(): Promise<{ uid: number; gid: number }> {
  const { stdout } = await run('id', ['postgres']);
  const uid = /uid=(\d+)/.exec(stdout)?.[1];
  const gid = /gid=(\d+)/.exec(stdout)?.[1];
  if (uid === undefined || gid === undefined) throw new Error('no postgres user');
  return { uid: Number(uid), gid: Number(gid) };
}
