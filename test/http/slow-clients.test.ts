import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'vitest';
import { HEAD_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS } from '../../api/http/timeouts.ts';
import { createHarness } from '../support/harness.ts';

/** A client socket and how it ended: what the server sent, and whether the server closed it. */
type Client = { socket: Socket; received: () => string; closed: Promise<void>; closedByServer: () => boolean };

function client(port: number): Promise<Client> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    let ended = false;
    socket.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
    // Only the server ends these: the test never calls end() or destroy() before they close.
    socket.on('end', () => (ended = true));
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    socket.on('error', () => {});
    socket.once('connect', () => resolve({ socket, received: () => received, closed, closedByServer: () => ended }));
    socket.once('error', reject);
  });
}

const responses = (text: string) => text.match(/HTTP\/1\.1 \d{3}/g) ?? [];

/** Waits until `c` has received `n` responses (or fails saying what it got once its socket closed). */
async function responsesOn(c: Client, n: number): Promise<void> {
  while (responses(c.received()).length < n) {
    assert.equal(c.socket.destroyed, false, `closed after ${JSON.stringify(c.received())}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('slow and silent clients cannot hold the server', () => {
  it('closes connections without a whole request head, answers others, keeps idle keep-alives', async () => {
    const h = await createHarness();
    const slowTimers: NodeJS.Timeout[] = [];
    const clients: Client[] = [];
    try {
      await h.app.listen({ port: 0, host: '127.0.0.1' });
      const server = h.app.server;
      const port = (server.address() as { port: number }).port;
      assert.ok(server.headersTimeout <= HEAD_TIMEOUT_MS && server.headersTimeout >= 5_000);
      assert.ok(server.keepAliveTimeout > 60_000 && server.keepAliveTimeout === KEEP_ALIVE_TIMEOUT_MS);

      // A keep-alive client that made one request and then says nothing: load balancers' pooled sockets.
      const pooled = await client(port);
      pooled.socket.write('GET /healthz HTTP/1.1\r\nHost: pb\r\n\r\n');
      await responsesOn(pooled, 1);

      // 2,000 silent sockets and 10 clients sending one byte of a request head every 200 ms. Opened 200
      // at a time, each wave accepted before the next: past the listen backlog the kernel would hold
      // the rest, never reaching the server (nor costing it anything).
      const connections = () =>
        new Promise<number>((resolve, reject) => {
          server.getConnections((error, n) => (error ? reject(error) : resolve(n)));
        });
      const silent: Client[] = [];
      for (let wave = 0; wave < 10; wave++) {
        silent.push(...(await Promise.all(Array.from({ length: 200 }, () => client(port)))));
        while ((await connections()) < silent.length + 1) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const head = `GET /healthz HTTP/1.1\r\nHost: pb\r\nX-Pad: ${'a'.repeat(4_000)}\r\n\r\n`;
      const slow = await Promise.all(Array.from({ length: 10 }, () => client(port)));
      slow.forEach((c) => {
        let sent = 0;
        slowTimers.push(setInterval(() => c.socket.writable && c.socket.write(head[sent++ % head.length]!), 200));
      });
      clients.push(pooled, ...silent, ...slow);
      const rssHeld = process.memoryUsage().rss;

      // The server answers a new client while they are all connected.
      const fresh = await client(port);
      fresh.socket.write('GET /healthz HTTP/1.1\r\nHost: pb\r\nConnection: close\r\n\r\n');
      await responsesOn(fresh, 1);
      assert.match(fresh.received(), /^HTTP\/1\.1 200 OK\r\n[\s\S]*\{"status":"ok"\}$/);

      // Every silent and slow socket is closed by the server itself, the slow ones with the 408 envelope.
      await Promise.all([...silent, ...slow].map((c) => c.closed));
      for (const c of [...silent, ...slow]) assert.ok(c.closedByServer(), 'closed by the server');
      for (const c of slow) {
        assert.match(c.received(), /^HTTP\/1\.1 408 Request Timeout\r\n/);
        const envelope = { error: { code: 'bad_request', message: 'the request was not received in time' } };
        assert.ok(c.received().endsWith(`\r\n\r\n${JSON.stringify(envelope)}`), c.received());
      }
      assert.equal(await connections(), 1, 'only the idle keep-alive connection is left');

      // The idle keep-alive connection outlived the head deadline and still takes its next request.
      assert.equal(pooled.socket.destroyed, false);
      pooled.socket.write('GET /healthz HTTP/1.1\r\nHost: pb\r\n\r\n');
      await responsesOn(pooled, 2);
      assert.deepEqual(responses(pooled.received()), ['HTTP/1.1 200', 'HTTP/1.1 200']);
      const rssAfter = process.memoryUsage().rss;
      // Informative only (this process holds the clients too): shown when the test fails or with --silent=false.
      const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
      console.log(`rss with 2,010 held sockets ${mib(rssHeld)}, after the server closed them ${mib(rssAfter)}`);
    } finally {
      for (const timer of slowTimers) clearInterval(timer);
      for (const c of clients) c.socket.destroy();
      await h.close();
    }
  });
});
