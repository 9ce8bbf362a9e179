import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'vitest';
import { writeLines } from '../../ingest/generate/write.ts';

describe('writeLines', () => {
  it('waits for a slow reader instead of buffering: the pending bytes stay bounded', async () => {
    const highWaterMark = 16 * 1024;
    let received = '';
    let maxPending = 0;
    const slow = new Writable({
      highWaterMark,
      decodeStrings: false,
      write(chunk: string, _encoding, callback) {
        maxPending = Math.max(maxPending, slow.writableLength);
        received += chunk;
        setImmediate(callback);
      },
    });
    function* lines() {
      for (let n = 0; n < 20_000; n++) yield `{"n":${n},"pad":"${'x'.repeat(40)}"}\n`;
    }
    const count = await writeLines(lines(), slow);
    assert.equal(count, 20_000);
    assert.equal(received, [...lines()].join(''));
    // One chunk (~64 KiB) may overshoot the mark; without backpressure all ~1 MB would queue.
    assert.ok(maxPending <= highWaterMark + 70 * 1024, `pending reached ${maxPending} bytes`);
  });

  it('rejects when the stream fails', async () => {
    const broken = new Writable({
      write(_chunk, _encoding, callback) {
        callback(new Error('EPIPE'));
      },
    });
    function* lines() {
      for (let n = 0; n < 100_000; n++) yield `line ${n}\n`;
    }
    await assert.rejects(writeLines(lines(), broken), /EPIPE/);
  });
});
