import type { Writable } from 'node:stream';

/** Resolves on 'drain' (or 'close', when the reader is gone), rejects on 'error'; leaves no listeners behind. */
function drained(out: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      out.off('drain', done);
      out.off('close', done);
      out.off('error', fail);
    };
    const done = () => {
      cleanup();
      resolve();
    };
    const fail = (error: Error) => {
      cleanup();
      reject(error);
    };
    out.on('drain', done);
    out.on('close', done);
    out.on('error', fail);
  });
}

const CHUNK_CHARS = 64 * 1024;

/**
 * Writes lines in ~64 KiB chunks, waiting for 'drain' whenever the stream's buffer is full, so a
 * slow consumer (a pipe, a disk) throttles the generator instead of memory growing.
 * Returns the number of lines written.
 */
export async function writeLines(lines: Iterable<string>, out: Writable): Promise<number> {
  let chunk = '';
  let count = 0;
  let failure: Error | null = null;
  const onError = (error: Error) => {
    failure = error;
  };
  out.on('error', onError);
  const flush = async () => {
    if (chunk.length === 0) return;
    const text = chunk;
    chunk = '';
    if (!out.write(text)) await drained(out);
  };
  try {
    for (const line of lines) {
      if (failure) throw failure;
      chunk += line;
      count += 1;
      if (chunk.length >= CHUNK_CHARS) await flush();
    }
    await flush();
    if (failure) throw failure;
    return count;
  } finally {
    out.off('error', onError);
  }
}
