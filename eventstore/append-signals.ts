import type { EventEmitter } from 'node:events';

/**
 * Sleeps until `signals` reports an append past `afterPosition` ('append', position), the log is
 * closed ('close'), the abort signal fires, or `timeoutMs` passes — whichever comes first.
 * Shared by the adapters' `waitForAppend`.
 */
export function sleepUntilAppend(
  signals: EventEmitter,
  afterPosition: number,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signals.off('append', onAppend);
      signals.off('close', done);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const onAppend = (position: number) => {
      if (position > afterPosition) done();
    };
    const timer = setTimeout(done, timeoutMs);
    signals.on('append', onAppend);
    signals.on('close', done);
    signal?.addEventListener('abort', done, { once: true });
  });
}
