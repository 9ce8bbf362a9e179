import type { Socket } from 'node:net';
import { Socket as NetSocket } from 'node:net';

/**
 * Writes to a connection's socket leave at the end of the event-loop turn that made them
 * (setImmediate), with every other connection's writes of that turn, instead of one `writev` as each
 * response ends. A response written to a peer that sleeps waiting for it pays, inside the server's
 * `writev`, for waking that peer: on one host (loopback; an agent beside the service) that wake-up cost
 * more than the rest of sending a small read's response (measured with perf: 18 µs of a 97 µs MCP call,
 * 2 µs in bare Fastify, whose faster turns found the client awake). Writes that leave together wake a
 * sleeping peer once. Nothing waits longer than the turn it was written in: the requests a turn reads
 * are answered at its end, in the order they were written, so a turn's last response leaves when it
 * did before and the earlier ones by as much later as the turn took to finish (a few requests' work).
 *
 * The socket stays a plain Writable: `_write`/`_writev` complete later, as any stream may, and the
 * stream buffers and orders further writes meanwhile; `end()` waits for them. A socket destroyed with
 * a write still waiting (an error response written just before `destroy()`) sends that write first,
 * as an immediate write would have.
 */
export type TurnWrites = {
  /** Called with each accepted connection (a server's 'connection' event). */
  adopt(socket: Socket): void;
  /** Writes waiting for the end of this turn (for tests). */
  readonly waiting: number;
};

type WriteFn = NonNullable<Socket['_write']>;
type WritevFn = NonNullable<Socket['_writev']>;

const proto = NetSocket.prototype;
const baseWrite: WriteFn | undefined = typeof proto._write === 'function' ? proto._write : undefined;
const baseWritev: WritevFn | undefined = typeof proto._writev === 'function' ? proto._writev : undefined;
const baseDestroy = proto.destroy;

export function createTurnWrites(): TurnWrites {
  // At most one waiting write per socket: a Writable calls _write/_writev again only after the last one's callback.
  let waiting = new Map<Socket, () => void>();

  function flush(): void {
    const turn = waiting;
    waiting = new Map();
    for (const write of turn.values()) write();
  }

  function defer(socket: Socket, write: () => void): void {
    if (waiting.size === 0) setImmediate(flush);
    waiting.set(socket, write);
  }

  return {
    adopt(socket) {
      // A Node without these stream methods on its sockets keeps writing at once.
      if (!baseWrite || !baseWritev) return;
      socket._write = function (this: Socket, chunk, encoding, callback) {
        defer(this, () => baseWrite.call(this, chunk, encoding, callback));
      };
      socket._writev = function (this: Socket, chunks, callback) {
        defer(this, () => baseWritev.call(this, chunks, callback));
      };
      socket.destroy = function (this: Socket, error?: Error) {
        const write = waiting.get(this);
        if (write) {
          waiting.delete(this);
          write();
        }
        return baseDestroy.call(this, error);
      };
    },
    get waiting() {
      return waiting.size;
    },
  };
}
