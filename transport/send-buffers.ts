import { joinedSize, joinInto } from '../service/spliced.ts';

/**
 * Buffers for large response bodies that are joined anew for every request (a kept page with this
 * request's `readAt` put in, an MCP result with its id), used again once their response is over. A
 * fresh buffer of 60-160 KB cost more than copying into it: the allocator zero-fills it and the kernel
 * faults its pages in anew (Buffer.allocUnsafe and a copy of 160 KB: 18-21 µs alone, about 50 µs of a
 * delta page's server CPU under load; a reused one: 3 µs). Bodies up to SMALLEST come from
 * service/spliced.ts's slab instead.
 *
 * A body goes back when its response closes: by then its bytes are in the kernel, or the connection is
 * gone and nothing more is written from it (a socket destroyed with a write waiting sends that write
 * first: transport/turn-writes.ts). Only idle buffers are kept, up to `keepBytes`.
 */
export type SendBuffers = {
  /** `size` bytes of a lent buffer, or null for a size this pool does not serve. */
  lend(size: number): Buffer | null;
  /** Gives back a body from `lend` whose bytes nothing will read again; anything else is ignored. */
  giveBack(body: Buffer): void;
  /** Whether `body` is lent by this pool (and not given back yet). */
  lends(body: Buffer): boolean;
  /** Bytes of the idle buffers kept (for tests). */
  keptBytes(): number;
};

/** Sizes served: above the slab's bodies, up to 1 MiB (a call page is at most 512 KiB). */
const SMALLEST = 16 * 1024;
const LARGEST = 1024 * 1024;

export function createSendBuffers(keepBytes = 8 * 1024 * 1024): SendBuffers {
  // Idle buffers by capacity: powers of two from 32 KiB, so a page that grows a little still finds one.
  const idle = new Map<number, Buffer[]>();
  // Buffers out with a body, by their memory: one given back twice would be lent to two responses at
  // once. Weak: a body never given back (dropped by an error before it was sent) is collected with its buffer.
  const lent = new WeakMap<ArrayBufferLike, Buffer>();
  let kept = 0;
  return {
    lend(size) {
      if (size <= SMALLEST || size > LARGEST) return null;
      let capacity = 2 * SMALLEST;
      while (capacity < size) capacity *= 2;
      let buffer = idle.get(capacity)?.pop();
      if (buffer) kept -= capacity;
      else buffer = Buffer.allocUnsafeSlow(capacity);
      lent.set(buffer.buffer, buffer);
      return buffer.subarray(0, size);
    },
    giveBack(body) {
      const buffer = lent.get(body.buffer);
      if (buffer === undefined) return;
      lent.delete(body.buffer);
      if (kept + buffer.length > keepBytes) return;
      let list = idle.get(buffer.length);
      if (!list) idle.set(buffer.length, (list = []));
      list.push(buffer);
      kept += buffer.length;
    },
    lends: (body) => lent.has(body.buffer),
    keptBytes: () => kept,
  };
}

/** The process's pool, shared by the transports (REST pages, MCP results). */
export const sendBuffers = createSendBuffers();

/**
 * `pieces` joined as service/spliced.ts `joinedBytes` joins them, into a body lent by the process's
 * pool; null for a size the pool does not serve (then joinedBytes makes it).
 */
export function lentJoin(pieces: readonly Buffer[], between: string, end = ''): Buffer | null {
  const body = sendBuffers.lend(joinedSize(pieces, between, end));
  if (body !== null) joinInto(body, pieces, between, end);
  return body;
}

/** Gives `body` back to the process's pool when the response closes, if the pool lent it. */
export function giveBackWhenClosed(response: { once(event: 'close', listener: () => void): unknown }, body: Buffer): void {
  if (sendBuffers.lends(body)) response.once('close', () => sendBuffers.giveBack(body));
}
