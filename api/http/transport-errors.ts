import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { ServiceError } from '../../service/errors.ts';

/**
 * Rejections that happen before a request reaches a route (the HTTP parser, the router) get the
 * same `{error:{code,message}}` envelope as every other error. Messages are fixed words: nothing of
 * the request (path, header, body) is ever echoed back.
 */

/** What Node's HTTP parser refused, as an envelope error. */
export function parserRejection(code: string | undefined): ServiceError {
  if (code === 'HPE_HEADER_OVERFLOW')
    return { status: 431, code: 'bad_request', message: 'request headers are too large (limit about 16 KB)' };
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'ERR_HTTP_REQUEST_HEADERS_TIMEOUT') {
    return { status: 408, code: 'bad_request', message: 'the request was not received in time' };
  }
  if (code === 'HPE_INVALID_METHOD') return { status: 400, code: 'bad_request', message: 'unknown HTTP method' };
  if (code === 'HPE_UNEXPECTED_CONTENT_LENGTH' || code === 'HPE_INVALID_CONTENT_LENGTH') {
    return { status: 400, code: 'bad_request', message: 'invalid or conflicting Content-Length' };
  }
  if (code === 'HPE_INVALID_CHUNK_SIZE' || code === 'HPE_INVALID_TRANSFER_ENCODING') {
    return { status: 400, code: 'bad_request', message: 'invalid chunked transfer encoding' };
  }
  return { status: 400, code: 'bad_request', message: 'malformed HTTP request' };
}

/** The bytes of a complete HTTP/1.1 error response, written straight to a socket the parser gave up on. */
export function rawErrorResponse(error: ServiceError): string {
  const body = JSON.stringify({ error: { code: error.code, message: error.message } });
  return (
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? 'Error'}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Cache-Control: no-store\r\n' +
    'X-Content-Type-Options: nosniff\r\n' +
    'Connection: close\r\n\r\n' +
    body
  );
}

/**
 * Fastify's `clientErrorHandler`: the parser refused the bytes (unknown method, bad chunking,
 * duplicate Content-Length, headers over the limit …). `onRejected` counts it for /metrics.
 */
export function createClientErrorHandler(onRejected: (status: number) => void) {
  return (error: Error & { code?: string }, socket: Socket): void => {
    // A reset connection has nobody to answer.
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const rejection = parserRejection(error.code);
    onRejected(rejection.status);
    if (socket.writable) socket.write(rawErrorResponse(rejection));
    socket.destroy();
  };
}
