import { THESIS_ITEMS_MAX, THESIS_THRESHOLD, type ThesisItem } from '../../readmodels/schemas.ts';

/**
 * What a snapshot keeps of a read. "Threshold 1000" is read as: the item's provider-reported
 * trade `usdValue` is at least 1000 (USD); an item without a usdValue does not qualify.
 * Newest first (createdAt, then id for a stable order), one item per id, at most 25.
 * `hasMore` when more items qualified than were kept, or the source said it held more.
 */
export function selectThesisItems(
  items: readonly ThesisItem[],
  moreAtSource: boolean,
): { items: ThesisItem[]; hasMore: boolean } {
  const seen = new Set<string>();
  const qualified: ThesisItem[] = [];
  for (const item of items) {
    if (item.trade.usdValue === null || item.trade.usdValue < THESIS_THRESHOLD || seen.has(item.id)) continue;
    seen.add(item.id);
    qualified.push(item);
  }
  qualified.sort(
    (a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0),
  );
  return { items: qualified.slice(0, THESIS_ITEMS_MAX), hasMore: qualified.length > THESIS_ITEMS_MAX || moreAtSource };
}
