import type { Awaitable } from '../readmodels/awaitable.ts';

/**
 * What a handler that is not async returns once it has answered, or will: the promise of a reply
 * still pending, which Fastify waits for, or nothing when the reply was sent in this turn (Fastify
 * takes any other value a handler returns for a payload to send).
 */
export const pendingOnly = <T>(answer: Awaitable<T>): Promise<T> | undefined => (answer instanceof Promise ? answer : undefined);
