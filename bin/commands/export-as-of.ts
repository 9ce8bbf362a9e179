import { mkdirSync } from 'node:fs';
import { parseConfig } from '../../config/config.ts';
import { exportAsOf, EXPORT_SCHEMA_VERSION, type ExportFormat } from '../../service/analyst-export.ts';
import { namedPoint, resolvePoint } from '../../service/history-board.ts';
import { openStores } from '../../service/stores.ts';
import { parseStrict, printHelp, usageError } from '../args.ts';

const USAGE = `usage: pulseboard export --format parquet|ndjson [--as-of ISO|CURSOR] --out DIR

Writes the board as it stood at a point, for analysts, into DIR (created if missing):
  projects.<format>  the board as of the point (every Project field; nested objects as JSON text),
                     with seq and writtenAt of each project's write
  calls.<format>     visible call records last written by the point, without thesis text (calls are
                     not versioned: one written after the point is left out, and counted)
  events.<format>    the log up to the point: position, stream, type, recordedAt, data (JSON text);
                     thesis-feed and access events left out, private fields read "[withheld]"
Parquet files carry the point and schema version ${EXPORT_SCHEMA_VERSION} in their key-value metadata
(pulseboard.as_of, pulseboard.as_of_cursor, pulseboard.as_of_position, pulseboard.schema_version);
NDJSON exports write them to DIR/manifest.json. Files are written in batches and appear once complete.

  --as-of   an ISO 8601 date-time (the last write recorded at or before it) or a delta cursor
            (exactly that point); default: everything the read models have applied

Exit status: 0 written, 1 failed, 2 usage error.
`;

export async function runAsOfExport(args: string[]): Promise<number> {
  const parsed = parseStrict({
    args,
    options: {
      format: { type: 'string' },
      'as-of': { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: false,
  });
  if (!parsed.ok) return usageError('export', parsed.reason);
  const { values } = parsed.parsed;
  if (values.help) return printHelp(USAGE);
  if (values.format !== 'parquet' && values.format !== 'ndjson')
    return usageError('export', '--format must be parquet or ndjson');
  if (values.out === undefined || values.out === '')
    return usageError('export', '--out needs a directory to write the files into');
  const format: ExportFormat = values.format;
  const config = parseConfig();
  if (!config.ok) {
    process.stderr.write(`pulseboard export: ${config.reason}\n`);
    return 2;
  }
  let stores: Awaited<ReturnType<typeof openStores>>;
  try {
    stores = await openStores(config.config);
  } catch (error) {
    process.stderr.write(
      `pulseboard export: cannot open the stores: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return 1;
  }
  try {
    const history = stores.store.history;
    if (!history) {
      process.stderr.write(
        'pulseboard export: this read store keeps no history; an export as of a point is not available\n',
      );
      return 1;
    }
    if ((await history.recordedFrom('projects')) > 0) {
      process.stderr.write("pulseboard export: the history read model is incomplete; run 'pulseboard replay' first\n");
      return 1;
    }
    const archive = await stores.log.archiveId();
    const checkpoint = await stores.store.checkpoint('projects', { fresh: true });
    const given = values['as-of'];
    const point =
      given === undefined
        ? {
            ok: true as const,
            value: { seq: checkpoint, at: (await history.pointAtSeq('projects', checkpoint))?.writtenAt ?? null },
          }
        : await resolvePoint({ log: stores.log, store: stores.store, history, archive }, 'as-of', given);
    if (!point.ok) {
      process.stderr.write(`pulseboard export: ${point.error.message.replace("parameter 'as-of'", '--as-of')}\n`);
      return point.error.status === 400 ? 2 : 1;
    }
    mkdirSync(values.out, { recursive: true });
    let lastPrinted = -Infinity;
    const summary = await exportAsOf({
      log: stores.log,
      store: stores.store,
      point: point.value,
      named: namedPoint(archive, point.value),
      format,
      dir: values.out,
      onProgress: ({ file, rows }) => {
        const now = performance.now();
        if (now - lastPrinted < 1000) return;
        lastPrinted = now;
        process.stderr.write(`export: ${file}: ${rows} rows\n`);
      },
    });
    process.stderr.write(
      `export: as of position ${point.value.seq} (${point.value.at ?? 'before the first write'}): ${summary.projects} projects, ${summary.calls} calls (${summary.callsWrittenLater} written after the point left out), ${summary.events} events written to ${values.out} (${summary.files.join(', ')}); thesis text is never exported\n`,
    );
    return 0;
  } catch (error) {
    process.stderr.write(`pulseboard export: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    await stores.close();
  }
}
