import { createHash } from 'node:crypto';
import { THESIS_NETWORK_ID, type ThesisItem } from '../../readmodels/schemas.ts';
import type { ThesisSource } from './source.ts';

/**
 * SAMPLE DATA, NOT A REAL FEED. The embedded default (`npm start` without
 * PULSEBOARD_THESIS_SOURCE_URL) reads theses from here so the feature can be tried end to end.
 * Every text says it is sample data, authors are "Sample author N", and `sourceUrl` points at a
 * reserved `.example` host. Deterministic: the same contract at the same time gives the same
 * items (ids, texts, authors and trade values depend on the contract only; createdAt counts back
 * from the time of the read).
 */
export const SAMPLE_SOURCE_HOST = 'https://thesis-feed.example';
const SAMPLE_ITEMS = 30;

export function createSampleThesisSource(options: { now?: () => Date } = {}): ThesisSource {
  const now = options.now ?? (() => new Date());
  return {
    async read(contract) {
      const seed = createHash('sha256').update(contract.toLowerCase()).digest();
      const readAt = now().getTime();
      const items: ThesisItem[] = [];
      for (let i = 0; i < SAMPLE_ITEMS; i++) {
        const byte = seed[i % seed.length]!;
        const author = (byte % 7) + 1;
        // Spread around the 1000 USD threshold, so the filter visibly drops some items.
        const usdValue = Math.round(((byte * 97 + i * 31) % 5000) + 200);
        items.push({
          id: `sample-${contract.slice(2, 10)}-${i + 1}`,
          text: `[Sample data, not a real thesis] Illustrative thesis ${i + 1} for ${contract.slice(0, 10)}…: the bundled sample adapter wrote this text so the thesis feed can be tried without a provider.`,
          createdAt: new Date(readAt - (i + 1) * 37 * 60_000).toISOString(),
          author: {
            name: `Sample author ${author}`,
            handle: `sample_author_${author}`,
            avatar: null,
            verified: author % 3 === 0,
          },
          trade: {
            usdValue,
            realizedPnlUsd: Math.round(((byte * 13) % 2000) - 1000),
            unrealizedPnlUsd: (byte + i) % 4 === 0 ? null : Math.round(((byte * 7 + i) % 3000) - 1500),
          },
        });
      }
      return {
        ok: true,
        items,
        moreAtSource: false,
        sourceUrl: `${SAMPLE_SOURCE_HOST}/sample/${THESIS_NETWORK_ID}/${contract.toLowerCase()}`,
      };
    },
  };
}
