import type { ServerResponse } from 'node:http';

/**
 * Large bodies joined per request (a kept page with this request's readAt) are written into buffers
 * reused once their response has closed: a fresh 60-160 KB buffer a request cost more than the read.
 */
const SMALLEST = 16 * 1024;
const LARGEST = 1024 * 1024;
const IDLE_BYTES_MAX = 8 * 1024 * 1024;

/** Idle buffers by capacity (powers of two from 32 KiB, so a page that grows a little still finds one). */
const idle = new Map<number, Buffer[]>();
let idleBytes = 0;

/** `head` + `middle` + `tail` as one buffer; a reused one, given back when `response` closes, for a large body. */
export function joinedBody(response: ServerResponse, head: Buffer, middle: string, tail: Buffer): Buffer {
  const size = head.length + Buffer.byteLength(middle, 'utf8') + tail.length;
  if (size <= SMALLEST || size > LARGEST) return Buffer.concat([head, Buffer.from(middle, 'utf8'), tail]);
  let capacity = 2 * SMALLEST;
  while (capacity < size) capacity *= 2;
  let buffer = idle.get(capacity)?.pop();
  if (buffer) idleBytes -= capacity;
  else buffer = Buffer.allocUnsafeSlow(capacity);
  buffer.set(head, 0);
  const at = head.length + buffer.write(middle, head.length, 'utf8');
  buffer.set(tail, at);
  // Its bytes are in the kernel once the response has closed, or the connection is gone.
  response.once('close', () => giveBack(buffer));
  return buffer.subarray(0, size);
}

function giveBack(buffer: Buffer): void {
  if (idleBytes + buffer.length > IDLE_BYTES_MAX) return;
  let list = idle.get(buffer.length);
  if (!list) idle.set(buffer.length, (list = []));
  list.push(buffer);
  idleBytes += buffer.length;
}
