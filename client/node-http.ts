import http from 'node:http';
import https from 'node:https';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { Answer, Send } from './http.ts';

const decompress: Record<string, (body: Buffer) => Promise<Buffer>> = {
  gzip: promisify(zlib.gunzip),
  'x-gzip': promisify(zlib.gunzip),
  deflate: promisify(zlib.inflate),
  br: promisify(zlib.brotliDecompress),
};
/** What fetch asks for when it may have answers compressed. */
const ACCEPT_COMPRESSED = 'gzip, deflate, br';
const utf8 = new TextDecoder();

/**
 * How the client sends on Node when given no fetch: node:http with a keep-alive agent, each body read as
 * bytes and decoded once (fetch's web streams cost a walk far more CPU); a redirect goes to fetch.
 */
export function nodeSend(fallback: Send = (url, init) => globalThis.fetch(url, init)): Send {
  const agents = {
    'http:': new http.Agent({ keepAlive: true }),
    'https:': new https.Agent({ keepAlive: true }),
  };
  return (url, init) =>
    new Promise<Answer>((resolve, reject) => {
      const target = new URL(url);
      const secure = target.protocol === 'https:';
      const headers: Record<string, string> = { 'accept-encoding': ACCEPT_COMPRESSED, ...init.headers };
      if (init.body !== undefined) headers['content-length'] = String(Buffer.byteLength(init.body));
      const request = (secure ? https : http).request(
        target,
        { method: init.method, headers, agent: agents[secure ? 'https:' : 'http:'], signal: init.signal },
        (response) => {
          const status = response.statusCode ?? 0;
          if (status >= 300 && status < 400 && response.headers.location !== undefined) {
            response.resume();
            return resolve(fallback(url, init));
          }
          const chunks: Buffer[] = [];
          const body = new Promise<Buffer>((done, failed) => {
            response.on('data', (chunk: Buffer) => chunks.push(chunk));
            response.once('end', () => done(Buffer.concat(chunks)));
            response.once('error', failed);
            response.once('close', () => {
              if (!response.complete) failed(new Error('the connection closed before the whole answer came'));
            });
          });
          // Read or not, a failed body must not be an unhandled rejection.
          body.catch(() => {});
          const encoding = response.headers['content-encoding']?.trim().toLowerCase();
          const header = (name: string) => {
            const value = response.headers[name.toLowerCase()];
            return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
          };
          resolve({
            status,
            ok: status >= 200 && status < 300,
            headers: { get: header },
            async text() {
              const bytes = await body;
              const inflate = encoding === undefined ? undefined : decompress[encoding];
              return utf8.decode(inflate ? await inflate(bytes) : bytes);
            },
          });
        },
      );
      request.once('error', reject);
      request.end(init.body);
    });
}
