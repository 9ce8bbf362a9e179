import { parseConfig, type Config } from '../config/config.ts';
import { absentEmbeddedLog } from '../eventstore/open.ts';

/** What a command opened, or the exit status it ends with (the reason already written). */
export type Opened<T> = { ok: true; config: Config; opened: T } | { ok: false; status: number };

/**
 * The start of a command that reads the stores: the configuration, then the embedded event log's
 * presence (a command never creates an empty one), then `open`; each failure one line on stderr
 * naming the command. A bad configuration or a missing log exits 2; a failed open `failedStatus`.
 */
export async function openForCommand<T>(
  command: string,
  what: string,
  open: (config: Config) => Promise<T>,
  failedStatus: number,
): Promise<Opened<T>> {
  const say = (text: string) => process.stderr.write(`pulseboard ${command}: ${text}\n`);
  const config = parseConfig();
  if (!config.ok) {
    say(config.reason);
    return { ok: false, status: 2 };
  }
  const absent = absentEmbeddedLog(config.config);
  if (absent !== null) {
    say(absent);
    return { ok: false, status: 2 };
  }
  try {
    return { ok: true, config: config.config, opened: await open(config.config) };
  } catch (error) {
    say(`cannot open ${what}: ${error instanceof Error ? error.message : String(error)}`);
    return { ok: false, status: failedStatus };
  }
}
