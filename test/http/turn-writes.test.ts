import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createTurnWrites, type TurnWrites } from '../../transport/turn-writes.ts';

/** A server whose connections write through `turnWrites`; `onSocket` gets each accepted one. */
async function serve(turnWrites: TurnWrites, onSocket: (socket: Socket) => void): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => {
    accepted.push(socket);
    turnWrites.adopt(socket);
    onSocket(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as { port: number }).port };
}

/** Everything a client receives until the server closes the connection. */
function received(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const client = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    client.on('data', (chunk) => chunks.push(chunk));
    client.on('error', reject);
    client.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

const turnEnd = () => new Promise<void>((resolve) => setImmediate(resolve));

let servers: Server[] = [];
let accepted: Socket[] = [];
afterEach(async () => {
  // A failed expectation leaves connections open: closed here, so the servers can close.
  for (const socket of accepted) socket.destroy();
  accepted = [];
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  servers = [];
});

describe('turn writes', () => {
  it("holds a turn's writes on every connection until the turn ends, then sends them whole and in order", async () => {
    const turnWrites = createTurnWrites();
    const sockets: Socket[] = [];
    const connected = Promise.withResolvers<void>();
    const { server, port } = await serve(turnWrites, (socket) => {
      sockets.push(socket);
      if (sockets.length === 2) connected.resolve();
    });
    servers.push(server);
    const first = received(port);
    const second = received(port);
    await connected.promise;

    // One turn: a corked response on each connection (as node:http writes a head and a body).
    for (const [i, socket] of sockets.entries()) {
      socket.cork();
      socket.write(`head ${i};`);
      socket.write(`body ${i}`);
      socket.uncork();
    }
    // Still held: nothing has left either socket, and each holds one waiting write.
    expect(turnWrites.waiting).toBe(2);
    expect(sockets.map((s) => s.writableLength)).toEqual([13, 13]);

    await turnEnd();
    expect(turnWrites.waiting).toBe(0);
    expect(sockets.map((s) => s.writableLength)).toEqual([0, 0]);
    for (const socket of sockets) socket.end(' end');
    expect(await first).toBe('head 0;body 0 end');
    expect(await second).toBe('head 1;body 1 end');
  });

  it('writes made while a write waits follow it in order, in a later turn', async () => {
    const turnWrites = createTurnWrites();
    const { server, port } = await serve(turnWrites, (socket) => {
      socket.write('a');
      socket.write('b');
      socket.write('c');
      socket.end('d');
    });
    servers.push(server);
    expect(await received(port)).toBe('abcd');
  });

  it('a socket destroyed with a write waiting sends that write first (an error response, then the close)', async () => {
    const turnWrites = createTurnWrites();
    const { server, port } = await serve(turnWrites, (socket) => {
      socket.write('HTTP/1.1 400 Bad Request\r\n\r\n');
      expect(turnWrites.waiting).toBe(1);
      socket.destroy();
      expect(turnWrites.waiting).toBe(0);
    });
    servers.push(server);
    expect(await received(port)).toBe('HTTP/1.1 400 Bad Request\r\n\r\n');
  });

  it('a write to a peer that has gone reports the error to the stream, and nothing throws', async () => {
    const turnWrites = createTurnWrites();
    const errors: string[] = [];
    const closed = Promise.withResolvers<void>();
    const { server, port } = await serve(turnWrites, (socket) => {
      socket.on('error', (error: NodeJS.ErrnoException) => errors.push(error.code ?? error.name));
      socket.on('close', () => closed.resolve());
      // The client resets the connection; the server keeps writing until the stream fails.
      const writeOn = () => {
        if (socket.destroyed) return;
        socket.write(Buffer.alloc(64 * 1024));
        setImmediate(writeOn);
      };
      writeOn();
    });
    servers.push(server);
    const client = connect(port, '127.0.0.1');
    await once(client, 'connect');
    client.resetAndDestroy();
    await closed.promise;
    // At most one error, and only the peer's going: the stream ended, and nothing threw.
    expect(errors.length).toBeLessThanOrEqual(1);
    for (const code of errors) expect(['EPIPE', 'ECONNRESET']).toContain(code);
    expect(turnWrites.waiting).toBe(0);
  });
});
