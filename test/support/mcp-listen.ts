/**
 * A 2026-07-28 `subscriptions/listen` POSTed by hand (the SDK's client keeps the stream to itself):
 * the HTTP response, its event stream left open for the test to read.
 */
export function postListen(
  base: string,
  key: string,
  signal: AbortSignal,
  notifications: Record<string, unknown> = { resourcesListChanged: true },
): Promise<Response> {
  return fetch(`${base}/mcp`, {
    method: 'POST',
    signal,
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'subscriptions/listen',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'listen:1',
      method: 'subscriptions/listen',
      params: {
        notifications,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });
}
