/** A fetch that records each request and each body read (`text()`), in the order they happen. */
export function watchedFetch(events: string[]): typeof fetch {
  return async (input, init) => {
    events.push('request');
    const response = await fetch(input, init);
    const text = response.text.bind(response);
    Object.defineProperty(response, 'text', {
      value: async () => {
        const body = await text();
        events.push('body');
        return body;
      },
    });
    return response;
  };
}
