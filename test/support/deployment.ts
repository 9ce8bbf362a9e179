import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { openSync } from 'node:fs';
import { CLI } from './cli.ts';

/**
 * The fault test's deployment: `pulseboard` processes on hosts of their own, each a network namespace
 * joined to this one by a veth pair (10.60.<n>.1 here, 10.60.<n>.2 there), made and removed by the
 * test; where the machine refuses namespaces, processes run on loopback (`createHost` answers null).
 */
export type Host = {
  name: string;
  /** Where the host's processes listen. */
  address: string;
  /** This machine's end of the link: what the host's processes reach the servers on. */
  gateway: string;
  /** Takes the link down (every packet to and from the host lost) / up again. */
  cut(): void;
  restore(): void;
  remove(): void;
};

const ip = (...args: string[]) => spawnSync('ip', args, { stdio: 'ignore' }).status === 0;

export function createHost(name: string, n: number): Host | null {
  const ns = `pb-${name}-${process.pid}`;
  const outside = `pb${n}h${process.pid % 10_000}`;
  const inside = `pb${n}n${process.pid % 10_000}`;
  const [gateway, address] = [`10.60.${n}.1`, `10.60.${n}.2`];
  if (!ip('netns', 'add', ns)) return null;
  const made =
    ip('netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up') &&
    ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', inside) &&
    ip('link', 'set', inside, 'netns', ns) &&
    ip('addr', 'add', `${gateway}/24`, 'dev', outside) &&
    ip('link', 'set', outside, 'up') &&
    ip('netns', 'exec', ns, 'ip', 'addr', 'add', `${address}/24`, 'dev', inside) &&
    ip('netns', 'exec', ns, 'ip', 'link', 'set', inside, 'up');
  const remove = () => {
    ip('link', 'del', outside);
    ip('netns', 'del', ns);
  };
  if (!made) {
    remove();
    return null;
  }
  return {
    name: ns,
    address,
    gateway,
    cut: () => void ip('link', 'set', outside, 'down'),
    restore: () => void ip('link', 'set', outside, 'up'),
    remove,
  };
}

export type Process = {
  readonly url: string;
  child(): ChildProcess | null;
  /** Starts it (again) on its port; resolves once it listens. */
  start(): Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<void>;
};

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** `pulseboard <args>` on `host` (or loopback) at `port`, its stderr appended to `log`. */
export function pulseboardProcess(options: {
  args: string[];
  env: Record<string, string>;
  host: Host | null;
  port: number;
  log: string;
  /** Resolves start() on this line of stdout (default: serve's "listening on"); none: at spawn. */
  ready?: RegExp | null;
}): Process {
  const address = options.host?.address ?? '127.0.0.1';
  let child: ChildProcess | null = null;
  const node = [process.execPath, '--disable-warning=ExperimentalWarning', CLI, ...options.args];
  const ready = options.ready === undefined ? /listening on http/ : options.ready;
  return {
    url: `http://${address}:${options.port}`,
    child: () => child,
    async start() {
      const [command, ...args] = options.host ? ['ip', 'netns', 'exec', options.host.name, ...node] : node;
      const proc = spawn(command!, args, {
        env: {
          ...process.env,
          HOST: address,
          PORT: String(options.port),
          PULSEBOARD_LOG_LEVEL: 'warn',
          ...options.env,
        },
        stdio: ['ignore', 'pipe', openSync(options.log, 'a')],
      });
      child = proc;
      live.add(proc);
      proc.once('exit', () => live.delete(proc));
      if (ready === null) {
        proc.stdout!.resume();
        return;
      }
      let seen = '';
      await new Promise<void>((resolve, reject) => {
        proc.once('exit', (code) => reject(new Error(`pulseboard ${options.args.join(' ')} exited ${code}`)));
        proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
          seen += chunk;
          if (ready.test(seen)) resolve();
        });
      });
    },
    async kill(signal = 'SIGKILL') {
      const proc = child;
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = once(proc, 'exit');
      proc.kill(signal);
      await exited;
    },
  };
}
