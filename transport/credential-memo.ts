import type { CredentialMemo } from '../service/access.ts';

/**
 * One credential memo per connection (see CredentialMemo), held in a WeakMap by the connection's
 * socket: it goes with the socket, and no request on another connection ever reads it.
 */
const memos = new WeakMap<object, CredentialMemo>();

export function credentialMemoOf(socket: object | null | undefined): CredentialMemo | undefined {
  // No socket (a request object made without one): nothing to remember by.
  if (typeof socket !== 'object' || socket === null) return undefined;
  let memo = memos.get(socket);
  if (memo === undefined) {
    memo = {};
    memos.set(socket, memo);
  }
  return memo;
}
