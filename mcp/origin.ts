import type { Config } from '../config/config.ts';
import { errors, type ServiceError } from '../service/errors.ts';

/**
 * DNS-rebinding protection for /mcp (MCP Streamable HTTP transport, "Security Warning"): a page
 * on a hostile site whose name was re-pointed at 127.0.0.1 reaches this server with its own
 * Host and Origin. Requests are answered only when Host names this server and a browser Origin,
 * if any, is one it trusts. Non-browser clients send no Origin.
 */
export type OriginCheck = (headers: { host?: string | undefined; origin?: string | undefined }) => ServiceError | null;

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];
const WILDCARD_BINDS = new Set(['0.0.0.0', '::', '[::]']);

/** `name` or `name:port` (IPv6 in brackets), lower-cased; null when it is not a host at all. */
function splitHost(value: string): HostEntry | null {
  const text = value.trim().toLowerCase();
  const match = /^(\[[0-9a-f:.]+\]|[^:[\]\s/]+)(?::(\d{1,5}))?$/.exec(text);
  return match ? { name: match[1]!, port: match[2] ?? null } : null;
}

type HostEntry = { name: string; port: string | null };

/** An entry `name` allows that name on any port; `name:port` only that port. */
const hostAllowed = (entries: readonly HostEntry[], host: HostEntry): boolean =>
  entries.some((allowed) => allowed.name === host.name && (allowed.port === null || allowed.port === host.port));

export function createOriginCheck(
  config: Pick<Config, 'HOST' | 'PULSEBOARD_MCP_ALLOWED_HOSTS' | 'PULSEBOARD_MCP_ALLOWED_ORIGINS'>,
): OriginCheck {
  const bind = config.HOST.toLowerCase();
  const bindName = bind.includes(':') && !bind.startsWith('[') ? `[${bind}]` : bind;
  const hosts = config.PULSEBOARD_MCP_ALLOWED_HOSTS ?? [
    ...LOOPBACK_NAMES,
    ...(WILDCARD_BINDS.has(bind) ? [] : [bindName]),
  ];
  const anyHost = hosts[0] === '*';
  const hostEntries = hosts.map(splitHost).filter((entry) => entry !== null);
  const origins = config.PULSEBOARD_MCP_ALLOWED_ORIGINS;
  const anyOrigin = origins?.[0] === '*';

  function originAllowed(origin: string): boolean {
    if (anyOrigin) return true;
    const match = /^(https?):\/\/([^/]+)$/.exec(origin.trim().toLowerCase());
    if (!match) return false;
    if (origins) return (origins as readonly string[]).includes(`${match[1]}://${match[2]}`);
    const host = splitHost(match[2]!);
    return host !== null && LOOPBACK_NAMES.includes(host.name);
  }

  // The Host value last allowed, as sent: a client sends the same one on every call, parsed once.
  let lastAllowedHost: string | undefined;

  return ({ host, origin }) => {
    if (!anyHost && (host === undefined || host !== lastAllowedHost)) {
      const parsed = host === undefined ? null : splitHost(host);
      if (!parsed || !hostAllowed(hostEntries, parsed)) {
        return errors.forbidden(
          'the Host header does not name this server (DNS-rebinding protection of /mcp); connect by an allowed host name, or add it to PULSEBOARD_MCP_ALLOWED_HOSTS',
        );
      }
      lastAllowedHost = host;
    }
    if (origin !== undefined && !originAllowed(origin)) {
      return errors.forbidden(
        'requests from this Origin are not accepted (DNS-rebinding protection of /mcp); send no Origin header, or add the origin to PULSEBOARD_MCP_ALLOWED_ORIGINS',
      );
    }
    return null;
  };
}
