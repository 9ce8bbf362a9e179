import { echoed } from '../service/errors.ts';

/**
 * The SDK repeats some input whole in its errors (an unknown tool or resource, a header that
 * disagrees with the body, an unsupported version): those values reach it cut to the bound the
 * docs promise for every echo (service/errors.ts `echoed`: 100 characters, escaped). A value within
 * the bound and of printable ASCII, as every tool name, URI and header this server serves, is unchanged.
 */
const ECHOED_HEADERS = new Set(['mcp-protocol-version', 'mcp-method', 'mcp-name']);

type Params = Record<string, unknown> & { ref?: unknown };

const cut = (value: unknown): unknown => (typeof value === 'string' ? echoed(value) : value);

export const boundedEchoes = {
  header: (name: string, value: string): string => (ECHOED_HEADERS.has(name) ? echoed(value) : value),

  /** The message with its method, and the names and URIs of its params, cut (a copy; the rest is shared). */
  message(body: unknown): unknown {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
    const message = body as Record<string, unknown> & { params?: unknown };
    const params = message.params;
    const method = 'method' in message ? { method: cut(message.method) } : {};
    if (typeof params !== 'object' || params === null || Array.isArray(params)) return { ...message, ...method };
    const p = params as Params;
    const ref = typeof p.ref === 'object' && p.ref !== null ? (p.ref as Params) : undefined;
    return {
      ...message,
      ...method,
      params: {
        ...p,
        ...('name' in p ? { name: cut(p.name) } : {}),
        ...('uri' in p ? { uri: cut(p.uri) } : {}),
        ...(ref
          ? {
              ref: {
                ...ref,
                ...('uri' in ref ? { uri: cut(ref.uri) } : {}),
                ...('name' in ref ? { name: cut(ref.name) } : {}),
              },
            }
          : {}),
      },
    };
  },
};
