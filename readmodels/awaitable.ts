/**
 * A value now, or a promise of it: what a port returns when one adapter has the answer at once (the
 * embedded SQLite store, the in-process rate limiter) and another asks a server for it (MongoDB,
 * Redis). A value in hand is used in the same turn: awaiting it would cost a promise and a microtask
 * at every layer it passes, which is most of what a small read's own work is. An adapter that fails
 * returns a rejected promise, never throws, so callers handle one kind of failure.
 */
export type Awaitable<T> = T | Promise<T>;

/** `next(value)`: at once when the value is in hand, once it settles when it is a promise. */
export function andThen<T, U>(value: Awaitable<T>, next: (value: T) => Awaitable<U>): Awaitable<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}

/** What `run` returns, or a rejected promise when it throws: an adapter's way to keep its failures asynchronous. */
export function settledOrRejected<T>(run: () => T): Awaitable<T> {
  try {
    return run();
  } catch (error) {
    return Promise.reject(error);
  }
}
