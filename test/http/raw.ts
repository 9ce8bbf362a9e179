import { connect } from 'node:net';

export type RawResponse = { status: number; headers: Record<string, string>; body: string };

/**
 * Sends bytes as they are (no client to fix them up) and reads the first response on the
 * connection; null when the server closed without answering.
 */
export function rawRequest(
  port: number,
  bytes: string | Buffer,
  timeoutMs = 5000,
): Promise<RawResponse | null | 'timeout'> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    // A response to HEAD ends with its headers, whatever Content-Length says.
    const head = (typeof bytes === 'string' ? bytes : bytes.toString('latin1')).startsWith('HEAD ');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = () => {
      if (settled) return;
      const parsed = parseFirstResponse(Buffer.concat(chunks), head);
      if (parsed === 'incomplete') return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(parsed);
    };
    const timer = setTimeout(() => {
      settled = true;
      socket.destroy();
      resolve('timeout');
    }, timeoutMs);
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      finish();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      if (settled) return;
      const parsed = parseFirstResponse(Buffer.concat(chunks), head);
      settled = true;
      clearTimeout(timer);
      resolve(parsed === 'incomplete' ? null : parsed);
    });
    socket.write(bytes);
  });
}

function parseFirstResponse(data: Buffer, head: boolean): RawResponse | null | 'incomplete' {
  const text = data.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return 'incomplete';
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  if (head) return { status, headers, body: '' };
  const rest = data.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'));
  if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    if (rest.length < length) return 'incomplete';
    return { status, headers, body: rest.subarray(0, length).toString('utf8') };
  }
  if (headers['transfer-encoding'] === 'chunked') {
    const body = dechunk(rest);
    return body === null ? 'incomplete' : { status, headers, body };
  }
  if (status === 204 || status === 304) return { status, headers, body: '' };
  return 'incomplete';
}

function dechunk(data: Buffer): string | null {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) return null;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size)) return null;
    if (size === 0) return Buffer.concat(parts).toString('utf8');
    if (data.length < lineEnd + 2 + size + 2) return null;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}
