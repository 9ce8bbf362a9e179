/**
 * The leanest HTTP/1.1 client a bench can drive: one keep-alive socket, one request at a time, each
 * response read into reused buffers, so a page allocates nothing (node:http's chunks kept a mirror's
 * collector busy 0.44 s of a 1.2 s walk on the server's 2 cores). Responses must carry Content-Length.
 */
import net from 'node:net';

export type RawResponse = { status: number; body: Buffer };

export type RawHttpClient = {
  /** The response to GET `path`; its body is valid until the next request (copy it to keep it). */
  get(path: string, headers: Record<string, string>): Promise<RawResponse>;
  close(): void;
};

const HEAD_END = Buffer.from('\r\n\r\n');

export function connectRawHttp(port: number): Promise<RawHttpClient> {
  const readBuffer = Buffer.allocUnsafe(256 * 1024);
  let body = Buffer.allocUnsafe(1024 * 1024);
  let head = '';
  let status = 0;
  let length = -1;
  let received = 0;
  let waiting: { resolve: (response: RawResponse) => void; reject: (error: Error) => void } | null = null;

  function fail(error: Error): void {
    const caller = waiting;
    waiting = null;
    caller?.reject(error);
  }

  function take(chunk: Buffer): void {
    if (!waiting) throw new Error('bytes from the server with no request waiting');
    let at = 0;
    if (length < 0) {
      const end = chunk.indexOf(HEAD_END);
      if (end < 0) {
        head += chunk.toString('latin1');
        return;
      }
      head += chunk.toString('latin1', 0, end);
      at = end + HEAD_END.length;
      const statusLine = /^HTTP\/1\.1 (\d{3}) /.exec(head);
      const contentLength = /\r\ncontent-length: *(\d+)/i.exec(head);
      if (!statusLine || !contentLength)
        throw new Error(`a response the raw client cannot read: ${head.split('\r\n')[0]}`);
      status = Number(statusLine[1]);
      length = Number(contentLength[1]);
      if (body.length < length) body = Buffer.allocUnsafe(length * 2);
    }
    const count = Math.min(chunk.length - at, length - received);
    chunk.copy(body, received, at, at + count);
    received += count;
    if (received < length) return;
    const caller = waiting;
    waiting = null;
    const response = { status, body: body.subarray(0, length) };
    head = '';
    length = -1;
    received = 0;
    caller.resolve(response);
  }

  return new Promise((resolve, reject) => {
    const socket = net.connect({
      port,
      host: '127.0.0.1',
      onread: {
        buffer: readBuffer,
        callback: (bytes: number, buffer: Uint8Array) => {
          try {
            take(Buffer.from(buffer.buffer, buffer.byteOffset, bytes));
          } catch (error) {
            fail(error as Error);
            socket.destroy();
          }
          return true;
        },
      },
    });
    socket.setNoDelay(true);
    socket.on('error', (error) => (waiting ? fail(error) : reject(error)));
    socket.on('close', () => fail(new Error('the server closed the connection')));
    socket.once('connect', () =>
      resolve({
        get(path, headers) {
          if (waiting) return Promise.reject(new Error('one request at a time'));
          return new Promise<RawResponse>((resolveResponse, rejectResponse) => {
            waiting = { resolve: resolveResponse, reject: rejectResponse };
            let request = `GET ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n`;
            for (const [name, value] of Object.entries(headers)) request += `${name}: ${value}\r\n`;
            socket.write(`${request}\r\n`);
          });
        },
        close: () => socket.destroy(),
      }),
    );
  });
}
