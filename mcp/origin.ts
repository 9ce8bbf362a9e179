import { localhostAllowedHostnames, validateHostHeader, validateOriginHeader } from '@modelcontextprotocol/server';
import type { Config } from '../config/config.ts';
import { errors, type ServiceError } from '../service/errors.ts';

/**
 * DNS-rebinding protection for /mcp: the SDK's Host and Origin validators, with what our configuration
 * adds (a Host entry may name a port; an Origin is a whole `scheme://host[:port]`). Ours around the
 * SDK's for one reason: its refusals are JSON-RPC errors, ours the REST envelope's 403.
 */
export type OriginCheck = (headers: { host?: string | undefined; origin?: string | undefined }) => ServiceError | null;

const WILDCARD_BINDS = new Set(['0.0.0.0', '::', '[::]']);

/** `name` or `name:port` as the URL parser reads a Host (lower-cased, IPv6 in brackets, '' for no port). */
const hostParts = (value: string): { name: string; port: string } | null => {
  const url = URL.parse(`http://${value.trim()}`);
  return url && { name: url.hostname, port: url.port };
};

const originOf = (value: string): string | null => URL.parse(value.trim())?.origin ?? null;

export function createOriginCheck(
  config: Pick<Config, 'HOST' | 'PULSEBOARD_MCP_ALLOWED_HOSTS' | 'PULSEBOARD_MCP_ALLOWED_ORIGINS'>,
): OriginCheck {
  const bind = config.HOST.toLowerCase();
  const hosts = config.PULSEBOARD_MCP_ALLOWED_HOSTS ?? [
    ...localhostAllowedHostnames(),
    ...(WILDCARD_BINDS.has(bind) ? [] : [bind.includes(':') && !bind.startsWith('[') ? `[${bind}]` : bind]),
  ];
  const anyHost = hosts[0] === '*';
  const entries = hosts.map(hostParts).filter((entry) => entry !== null);
  const names = entries.map((entry) => entry.name);
  const origins = config.PULSEBOARD_MCP_ALLOWED_ORIGINS;
  const allowedOrigins = new Set(origins?.map(originOf).filter((origin) => origin !== null));
  const originNames = origins ? [...allowedOrigins].map((o) => new URL(o).hostname) : localhostAllowedHostnames();

  function hostAllowed(host: string | undefined): boolean {
    const checked = validateHostHeader(host, names);
    // An entry `name:port` allows that port only; the SDK's check is by name.
    const port = checked.ok ? (hostParts(host!)?.port ?? '') : '';
    return checked.ok && entries.some((e) => e.name === checked.hostname && (e.port === '' || e.port === port));
  }

  function originAllowed(origin: string): boolean {
    if (origins?.[0] === '*') return true;
    const scheme = URL.parse(origin.trim())?.protocol;
    if (!validateOriginHeader(origin, originNames).ok || (scheme !== 'http:' && scheme !== 'https:')) return false;
    return origins === undefined || allowedOrigins.has(originOf(origin) ?? '');
  }

  let lastAllowedHost: string | undefined; // as sent: a client sends the same one on every call, parsed once
  return ({ host, origin }) => {
    if (!anyHost && (host === undefined || host !== lastAllowedHost) && !hostAllowed(host))
      return errors.forbidden(
        'the Host header does not name this server (DNS-rebinding protection of /mcp); connect by an allowed host name, or add it to PULSEBOARD_MCP_ALLOWED_HOSTS',
      );
    if (!anyHost) lastAllowedHost = host;
    if (origin !== undefined && !originAllowed(origin))
      return errors.forbidden(
        'requests from this Origin are not accepted (DNS-rebinding protection of /mcp); send no Origin header, or add the origin to PULSEBOARD_MCP_ALLOWED_ORIGINS',
      );
    return null;
  };
}
