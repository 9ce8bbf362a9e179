/**
 * The export thread of `pulseboard export --format` (export-as-of.ts starts it with a bounded heap):
 * runs the export it is handed and posts its exit status.
 */
import { mkdirSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { exportAsOf } from '../../service/analyst-export.ts';
import { namedPoint, resolvePoint } from '../../service/history-board.ts';
import { openStores } from '../../service/stores.ts';
import { openForCommand } from '../command-stores.ts';
import type { ExportRequest } from './export-as-of.ts';

/** The page cache of each of the export's SQLite connections: it reads each row once, in index order. */
const EXPORT_SQLITE_CACHE_KIB = 4096;

/** Runs the export itself (in the export thread); returns the exit status. */
async function exportInThisThread(request: ExportRequest): Promise<number> {
  const { format } = request;
  const started = await openForCommand(
    'export',
    'the stores',
    (config) => openStores(config, { sqliteCacheKiB: EXPORT_SQLITE_CACHE_KIB }),
    1,
  );
  if (!started.ok) return started.status;
  const stores = started.opened;
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
    const given = request.asOf;
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
    mkdirSync(request.out, { recursive: true });
    let lastPrinted = -Infinity;
    const summary = await exportAsOf({
      log: stores.log,
      store: stores.store,
      point: point.value,
      named: namedPoint(archive, point.value),
      format,
      dir: request.out,
      onProgress: ({ file, rows }) => {
        const now = performance.now();
        if (now - lastPrinted < 1000) return;
        lastPrinted = now;
        process.stderr.write(`export: ${file}: ${rows} rows\n`);
      },
    });
    process.stderr.write(
      `export: as of position ${point.value.seq} (${point.value.at ?? 'before the first write'}): ${summary.projects} projects, ${summary.calls} calls, ${summary.events} events written to ${request.out} (${summary.files.join(', ')}); thesis text is never exported\n`,
    );
    return 0;
  } catch (error) {
    process.stderr.write(`pulseboard export: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    await stores.close();
  }
}

const port = parentPort;
if (!port) throw new Error('export-as-of-worker.ts runs as a worker thread of pulseboard export');
port.postMessage(await exportInThisThread(workerData as ExportRequest));
