/** The fixed, configured set of eight beats, in the order GET /v1/pulse returns them. */
export const BEATS = [
  { id: 'launches', label: 'Launches', blurb: 'New tokens and projects going live.' },
  { id: 'funding', label: 'Funding', blurb: 'Raises, grants and backers.' },
  { id: 'listings', label: 'Listings', blurb: 'Exchange and aggregator listings.' },
  { id: 'security', label: 'Security', blurb: 'Exploits, rugs, audits and honeypots.' },
  { id: 'onchain', label: 'On-chain', blurb: 'Flows, holders and liquidity moves.' },
  { id: 'social', label: 'Social', blurb: 'Follower surges and community moves.' },
  { id: 'infra', label: 'Infrastructure', blurb: 'Chains, bridges, tooling and upgrades.' },
  { id: 'policy', label: 'Policy', blurb: 'Regulation, legal and governance.' },
] as const;

export type BeatId = (typeof BEATS)[number]['id'];

export function isBeatId(value: string): value is BeatId {
  return BEATS.some((b) => b.id === value);
}
