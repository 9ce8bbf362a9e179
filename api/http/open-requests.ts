import type { Server } from 'node:http';

/** How many requests the server has taken and not yet finished answering (for the shutdown log). */
export function trackOpenRequests(server: Server): { count(): number } {
  let open = 0;
  server.on('request', (_request, response) => {
    open += 1;
    // 'close' fires once whether the response finished or the client went away.
    response.once('close', () => {
      open -= 1;
    });
  });
  return { count: () => open };
}
