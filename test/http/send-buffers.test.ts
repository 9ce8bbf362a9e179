import http from 'node:http';
import type { Socket } from 'node:net';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import type { BodyParts } from '../../service/spliced.ts';
import { sendParts } from '../../transport/compression.ts';
import { createSendBuffers } from '../../transport/send-buffers.ts';
import { createTurnWrites } from '../../transport/turn-writes.ts';

describe('send buffers', () => {
  it('lends buffers of pooled sizes only, and the same one again once it is given back', () => {
    const pool = createSendBuffers();
    expect(pool.lend(16 * 1024)).toBeNull();
    expect(pool.lend(1024 * 1024 + 1)).toBeNull();
    const first = pool.lend(40_000)!;
    expect(first.length).toBe(40_000);
    expect(first.buffer.byteLength).toBe(64 * 1024);
    const second = pool.lend(40_000)!;
    expect(second.buffer).not.toBe(first.buffer);
    expect(pool.lends(first)).toBe(true);
    expect(pool.lends(Buffer.alloc(40_000))).toBe(false);
    pool.giveBack(first);
    expect(pool.lends(first)).toBe(false);
    expect(pool.keptBytes()).toBe(64 * 1024);
    expect(pool.lend(60_000)!.buffer).toBe(first.buffer);
    expect(pool.keptBytes()).toBe(0);
  });

  it('never lends one buffer twice at once: a second release, or a buffer it did not lend, is ignored', () => {
    const pool = createSendBuffers();
    const lent = pool.lend(100_000)!;
    pool.giveBack(lent);
    pool.giveBack(lent);
    pool.giveBack(Buffer.allocUnsafeSlow(128 * 1024));
    expect(pool.keptBytes()).toBe(128 * 1024);
    const a = pool.lend(100_000)!;
    const b = pool.lend(100_000)!;
    expect(a.buffer).toBe(lent.buffer);
    expect(b.buffer).not.toBe(a.buffer);
  });

  it('keeps idle buffers up to its limit', () => {
    const pool = createSendBuffers(64 * 1024);
    const [a, b] = [pool.lend(50_000)!, pool.lend(50_000)!];
    pool.giveBack(a);
    pool.giveBack(b);
    expect(pool.keptBytes()).toBe(64 * 1024);
  });
});

describe('large kept bodies sent from reused buffers', () => {
  it("gives each response its own readAt while the turn's responses wait to be written together", async () => {
    const head = Buffer.from(`{"projects":[${'"a",'.repeat(10_000)}"a"],"readAt":"`);
    const tail = Buffer.from(`","tail":"${'b'.repeat(30_000)}"}`);
    const parts: BodyParts = { head, tail, etag: 'W/"test"' };
    const app = Fastify();
    const turnWrites = createTurnWrites();
    app.server.on('connection', (socket: Socket) => turnWrites.adopt(socket));
    app.get<{ Params: { n: string } }>('/page/:n', async (request, reply) => {
      reply.type('application/json');
      return sendParts(request, reply, parts, `2026-01-01T00:00:00.${request.params.n.padStart(3, '0')}Z`);
    });
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const get = (n: number) =>
      new Promise<string>((resolve, reject) => {
        http
          .get(`${address}/page/${n}`, { agent }, (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
          })
          .on('error', reject);
      });
    try {
      // Rounds of 16 requests sent at once: most arrive in one turn, whose answers all wait for its end.
      for (let round = 0; round < 5; round++) {
        const numbers = Array.from({ length: 16 }, (_, i) => round * 16 + i);
        const bodies = await Promise.all(numbers.map(get));
        for (const [i, body] of bodies.entries()) {
          expect(body.length).toBe(head.length + 24 + tail.length);
          expect(body).toBe(`${head.toString()}2026-01-01T00:00:00.${String(numbers[i]).padStart(3, '0')}Z${tail.toString()}`);
        }
      }
    } finally {
      agent.destroy();
      await app.close();
    }
  });
});
