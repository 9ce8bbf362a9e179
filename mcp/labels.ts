/** An access-log and metrics label: the operation, and for /mcp its JSON-RPC method and tool. */
export type OperationLabel = {
  readonly operation: string;
  readonly rpc?: { readonly method: string; readonly tool?: string };
};

/** The JSON-RPC methods labelled by name (metrics need a fixed set, never caller text); any other is `other`. */
const KNOWN_RPC_METHODS = [
  'initialize',
  'server/discover',
  'ping',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'completion/complete',
  'subscriptions/listen',
  'notifications/initialized',
  'notifications/cancelled',
  'prompts/list',
];

/**
 * The label of an /mcp body: its JSON-RPC method (and tool) from a fixed set, so caller text never
 * becomes a label. Every label is made once: a label string joined per request cost a hash of a new
 * string at every metrics look-up.
 */
export function rpcLabeller(toolNames: readonly string[]): (body: unknown) => OperationLabel {
  const label = (method: string, tool?: string): OperationLabel =>
    Object.freeze({
      operation: `mcp:${tool ?? method}`,
      rpc: Object.freeze(tool === undefined ? { method } : { method, tool }),
    });
  const byMethod = new Map(
    [...KNOWN_RPC_METHODS.filter((m) => m !== 'tools/call'), 'other'].map((method) => [method, label(method)]),
  );
  const byTool = new Map([...toolNames, 'unknown_tool'].map((tool) => [tool, label('tools/call', tool)]));
  const batch = label('batch');
  const unreadable: OperationLabel = Object.freeze({ operation: 'mcp' });
  return (body) => {
    if (Array.isArray(body)) return batch;
    if (typeof body !== 'object' || body === null) return unreadable;
    const { method, params } = body as { method?: unknown; params?: { name?: unknown } };
    if (typeof method !== 'string') return unreadable;
    if (method !== 'tools/call') return byMethod.get(method) ?? byMethod.get('other')!;
    const name = typeof params === 'object' && params !== null ? params.name : undefined;
    return (typeof name === 'string' ? byTool.get(name) : undefined) ?? byTool.get('unknown_tool')!;
  };
}
