/** Chain names and keys normalize through this one table (e.g. `eth` and `ethereum` are one chain). */
const CHAIN_ALIASES: Record<string, string> = {
  ethereum: 'ethereum',
  eth: 'ethereum',
  mainnet: 'ethereum',
  base: 'base',
  solana: 'solana',
  sol: 'solana',
  bsc: 'bsc',
  bnb: 'bsc',
  binance: 'bsc',
  'bnb-chain': 'bsc',
  arbitrum: 'arbitrum',
  arb: 'arbitrum',
  polygon: 'polygon',
  matic: 'polygon',
  optimism: 'optimism',
  op: 'optimism',
  avalanche: 'avalanche',
  avax: 'avalanche',
};

/** The canonical chain key; an unknown chain normalizes to its trimmed lower-case self. */
export function normalizeChain(chain: string): string {
  const key = chain.trim().toLowerCase();
  return CHAIN_ALIASES[key] ?? key;
}

export function isKnownChain(chain: string): boolean {
  return Object.hasOwn(CHAIN_ALIASES, chain.trim().toLowerCase());
}

/** EVM hex addresses compare case-insensitively; other encodings (base58 …) are case-sensitive. */
export function normalizeContract(contract: string): string {
  const trimmed = contract.trim();
  return /^0x[0-9a-fA-F]+$/.test(trimmed) ? trimmed.toLowerCase() : trimmed;
}

/** The lower-case host without `www.` of a URL or bare domain; null when it has no host. */
export function websiteHost(website: string): string | null {
  const trimmed = website.trim();
  if (trimmed === '') return null;
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed) ? trimmed : `https://${trimmed}`;
  try {
    const host = new URL(withScheme).hostname.toLowerCase().replace(/\.$/, '');
    if (!host.includes('.')) return null;
    return host.startsWith('www.') ? host.slice(4) : host;
  } catch {
    return null;
  }
}
