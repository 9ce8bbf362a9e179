import type { FastifyReply } from 'fastify';
import fp from 'fastify-plugin';
import type { OpenStream } from '../../service/changes.ts';

declare module 'fastify' {
  interface FastifyReply {
    /** Sends a change stream as server-sent events until it ends; the reply is hijacked. */
    sendEventStream(stream: OpenStream): Promise<void>;
  }
}

/**
 * Server-sent events: each event's data is one line (stored JSON text has no raw line breaks). The
 * stream runs until it ends (client gone, shutdown, the key revoked: then after an `error` event) or
 * a read fails; the client then reconnects with Last-Event-ID and loses nothing.
 */
export const ssePlugin = fp(async (app) => {
  app.decorateReply('sendEventStream', function (this: FastifyReply, stream: OpenStream) {
    return sendEventStream(this, stream);
  });
});

async function sendEventStream(reply: FastifyReply, stream: OpenStream): Promise<void> {
  reply.hijack();
  const res = reply.raw;
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) res.setHeader(name, value);
  // The connection is not reused after a stream (the client reconnects), and a server closing must not wait on it.
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'x-accel-buffering': 'no',
    connection: 'close',
  });
  const write = async (text: string) => {
    if (res.write(text)) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  };
  try {
    await write(': stream open\n\n');
    for await (const event of stream.events) {
      if (res.destroyed) break;
      await write(
        event.kind === 'row'
          ? `id: ${event.cursor}\ndata: ${event.json}\n\n`
          : event.kind === 'changes'
            ? `event: changes\ndata: ${event.json}\n\n`
            : event.kind === 'error'
              ? `event: error\ndata: ${event.json}\n\n`
              : ': heartbeat\n\n',
      );
    }
  } catch (error) {
    reply.log.warn(
      { err: { type: error instanceof Error ? error.name : typeof error } },
      'change stream ended by a failed read',
    );
  } finally {
    stream.close();
    res.end();
  }
}
