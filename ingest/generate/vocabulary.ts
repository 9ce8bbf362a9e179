import type { Random } from './random.ts';

/** Word lists and small text builders for the synthetic data set. */

export const CHAINS = ['ethereum', 'base', 'solana', 'bsc', 'arbitrum'] as const;
export type Chain = (typeof CHAINS)[number];

const NAME_HEADS = [
  'Aether',
  'Blink',
  'Cinder',
  'Drift',
  'Ember',
  'Flux',
  'Glint',
  'Halo',
  'Ion',
  'Jolt',
  'Kite',
  'Lumen',
  'Mosaic',
  'Nimbus',
  'Orbit',
  'Prism',
  'Quill',
  'Ripple',
  'Sable',
  'Tidal',
  'Umbra',
  'Vesper',
  'Wisp',
  'Zephyr',
] as const;
const NAME_TAILS = [
  'Labs',
  'Swap',
  'Fi',
  'Chain',
  'Protocol',
  'DAO',
  'Pad',
  'Vault',
  'Bridge',
  'Markets',
  'Net',
  'Cat',
] as const;
const TLDS = ['io', 'xyz', 'app', 'fi', 'org', 'finance'] as const;

export const CATEGORIES = [
  'lending',
  'dex',
  'perps',
  'infrastructure',
  'gaming',
  'meme token',
  'restaking',
  'oracle',
  'nft marketplace',
] as const;
export const STAGES = ['idea', 'testnet', 'live', 'mainnet beta'] as const;
export const CONFIDENCES = ['low', 'medium', 'high'] as const;
export const BACKERS = [
  'Northwind Ventures',
  'Blue Anchor Capital',
  'Parallel Seed',
  'Kestrel Partners',
  'Open Lattice Fund',
  'Meridian DAO',
] as const;

const WORDS = [
  'liquidity',
  'volume',
  'holders',
  'chart',
  'breakout',
  'support',
  'resistance',
  'narrative',
  'team',
  'roadmap',
  'audit',
  'launch',
  'listing',
  'community',
  'tokenomics',
  'supply',
  'unlock',
  'whales',
  'accumulation',
  'momentum',
  'the',
  'a',
  'is',
  'looks',
  'strong',
  'early',
  'still',
  'under',
  'over',
  'into',
  'with',
  'from',
  'clean',
  'thin',
  'weekly',
  'daily',
  'mcap',
  'floor',
  'entry',
  'exit',
  'target',
  'risk',
  'reward',
  'thesis',
  'conviction',
  'rotation',
] as const;

export function projectName(r: Random): { name: string; slug: string } {
  const name = `${r.pick(NAME_HEADS)} ${r.pick(NAME_TAILS)}`;
  return { name, slug: name.toLowerCase().replace(/[^a-z0-9]+/g, '') };
}

export function tld(r: Random): string {
  return r.pick(TLDS);
}

/** A contract address in the chain's usual form: 0x + 40 hex digits, or base58 on Solana. */
export function contractFor(chain: Chain, r: Random): string {
  return chain === 'solana' ? r.base58(44) : `0x${r.hex(40)}`;
}

function sentence(r: Random): string {
  const count = r.int(6, 16);
  const words: string[] = [];
  for (let i = 0; i < count; i++) words.push(r.pick(WORDS));
  const first = words[0]!;
  words[0] = first.charAt(0).toUpperCase() + first.slice(1);
  // An astral-plane character now and then, so that shortening is exercised on surrogate pairs.
  return `${words.join(' ')}${r.chance(0.05) ? ' 🚀' : ''}.`;
}

/** Prose of exactly `length` UTF-16 code units (a surrogate pair is never split at the end). */
export function prose(r: Random, length: number): string {
  const parts: string[] = [];
  let size = 0;
  while (size < length) {
    const s = sentence(r);
    parts.push(s);
    size += s.length + 1;
  }
  let text = parts.join(' ').slice(0, length);
  const last = text.charCodeAt(text.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) text = `${text.slice(0, -1)}.`;
  return text;
}

export function shortLine(r: Random): string {
  return sentence(r);
}
