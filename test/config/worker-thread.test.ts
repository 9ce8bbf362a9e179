import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { describe, it } from 'vitest';
import { onWorkerEnd, workerReplies } from '../../config/worker-thread.ts';

/** A thread that answers each message with it doubled, fails on 'fail' and ends on 'end'. */
const doubler = () =>
  new Worker(
    `const { parentPort } = require('node:worker_threads');
     parentPort.on('message', (m) => {
       if (m === 'fail') throw new Error('thread failed');
       if (m === 'end') return parentPort.close();
       parentPort.postMessage(m * 2);
     });`,
    { eval: true },
  );

describe('worker threads', () => {
  it('answers requests in the order asked, read as they arrive, and is idle once all have come', async () => {
    const worker = doubler();
    let idled = 0;
    const replies = workerReplies<number>(
      worker,
      (code) => new Error(`ended (${code})`),
      () => (idled += 1),
    );
    const answers = [1, 2, 3].map((n) => {
      const answer = replies.expect((reply) => `${n}→${reply}`);
      worker.postMessage(n);
      return answer;
    });
    assert.equal(replies.pending(), 3);
    await replies.idle();
    assert.deepEqual(await Promise.all(answers), ['1→2', '2→4', '3→6']);
    assert.equal(idled, 1, 'idle once, when the last came');
    await worker.terminate();
  });

  it('fails what is waiting, and every later request, with the error the thread failed with', async () => {
    const worker = doubler();
    const replies = workerReplies<number>(worker, (code) => new Error(`ended (${code})`));
    const waiting = replies.expect();
    worker.postMessage('fail');
    await assert.rejects(waiting, /thread failed/);
    await assert.rejects(replies.expect(), /thread failed/);
    assert.match(String(replies.gone()), /thread failed/);
  });

  it('tells an end by itself apart from a failure', async () => {
    const worker = doubler();
    const ended = new Promise<[Error | null, number]>((resolve) =>
      onWorkerEnd(worker, (failure, code) => resolve([failure, code])),
    );
    worker.postMessage('end');
    assert.deepEqual(await ended, [null, 0]);
  });
});
