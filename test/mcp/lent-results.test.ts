import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { it } from 'vitest';
import { createHarness } from '../support/harness.ts';
import { sendBuffers } from '../../transport/send-buffers.ts';
import { seedBoard, toolCall } from './support.ts';

/**
 * The bodies of the answers to `bodies` POSTed to /mcp back to back on one connection, in one write:
 * the server reads them in one turn, and the answers after the first wait for the ones before them.
 */
function pipelined(port: number, key: string, bodies: readonly string[]): Promise<string[]> {
  const requests = bodies.map(
    (body) =>
      `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\n` +
      `accept: application/json, text/event-stream\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(requests.join('')));
    let received = Buffer.alloc(0);
    const answers: string[] = [];
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      for (;;) {
        const headEnd = received.indexOf('\r\n\r\n');
        if (headEnd === -1) return;
        const length = Number(/content-length: (\d+)/i.exec(received.subarray(0, headEnd).toString('latin1'))?.[1]);
        if (received.length < headEnd + 4 + length) return;
        answers.push(received.subarray(headEnd + 4, headEnd + 4 + length).toString('utf8'));
        received = received.subarray(headEnd + 4 + length);
        if (answers.length === bodies.length) {
          socket.destroy();
          resolve(answers);
          return;
        }
      }
    });
    socket.on('error', reject);
  });
}

it('large tool results joined into lent buffers: answers of one turn keep their own id and bytes, and every buffer goes back', async () => {
  const h = await createHarness({ env: { PULSEBOARD_RATE_LIMIT: '1000' } });
  try {
    const key = await h.key('agent');
    await seedBoard(h);
    const port = Number(new URL(await h.app.listen({ host: '127.0.0.1', port: 0 })).port);
    const keptBefore = sendBuffers.keptBytes();
    const withoutReadAt = (text: string) => text.replace(/\\?"readAt\\?":\\?"[^"\\]+\\?"/g, '');
    let expected: string | undefined;
    for (let round = 0; round < 3; round++) {
      const ids = Array.from({ length: 12 }, (_, i) => 1000 + round * 12 + i);
      const texts = await pipelined(port, key, ids.map((id) => JSON.stringify(toolCall('list_projects', {}, id))));
      for (const [i, text] of texts.entries()) {
        assert.ok(Buffer.byteLength(text) > 16 * 1024, `a result of ${Buffer.byteLength(text)} bytes is not a lent one`);
        const message = JSON.parse(text) as { id: number; result: { isError?: boolean } };
        assert.equal(message.id, ids[i]);
        assert.notEqual(message.result.isError, true);
        const { id: _, ...rest } = message;
        expected ??= withoutReadAt(JSON.stringify(rest));
        assert.equal(withoutReadAt(JSON.stringify(rest)), expected);
      }
    }
    // Given back as each response closed: the pool now holds idle buffers.
    assert.ok(sendBuffers.keptBytes() > keptBefore, 'no lent buffer was given back');
  } finally {
    await h.close();
  }
});
