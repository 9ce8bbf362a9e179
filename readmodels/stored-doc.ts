import type { StoredDoc } from './port.ts';

/** A stored row's texts, as an adapter reads them; `state` is undefined in listing rows. */
export type StoredTexts = {
  id: string;
  doc: string;
  state: string | undefined;
  seq: number;
  writtenAt: string;
  sortKey: string;
  facet: string;
  keys: string;
};

const UNPARSED = Symbol('unparsed');

/**
 * A stored document whose `doc`, `state` and `keys` are parsed on first access: read paths that
 * splice `json` parse nothing. Listing rows are read without `state` (never served) and carry null
 * there. A class rather than an object literal with getters: V8 keeps such a literal in dictionary
 * mode, so every member read (a fold reads them all for each event) was a hash look-up. Shared by
 * every read-store adapter that keeps documents as JSON text.
 */
class LazyStoredDoc<D, S> implements StoredDoc<D, S> {
  readonly id: string;
  readonly json: string;
  readonly seq: number;
  readonly writtenAt: string;
  readonly sortKey: string;
  readonly facet: string;
  #stateText: string | undefined;
  #keysText: string;
  #doc: D | typeof UNPARSED = UNPARSED;
  #state: S | typeof UNPARSED = UNPARSED;
  #keys: Record<string, string[]> | undefined;

  constructor(texts: StoredTexts) {
    this.id = texts.id;
    this.json = texts.doc;
    this.seq = texts.seq;
    this.writtenAt = texts.writtenAt;
    this.sortKey = texts.sortKey;
    this.facet = texts.facet;
    this.#stateText = texts.state;
    this.#keysText = texts.keys;
  }

  get doc(): D {
    if (this.#doc === UNPARSED) this.#doc = JSON.parse(this.json) as D;
    return this.#doc;
  }

  get state(): S {
    if (this.#state === UNPARSED) this.#state = (this.#stateText === undefined ? null : JSON.parse(this.#stateText)) as S;
    return this.#state;
  }

  get keys(): Record<string, string[]> {
    this.#keys ??= JSON.parse(this.#keysText) as Record<string, string[]>;
    return this.#keys;
  }
}

export function storedFromTexts<D, S>(texts: StoredTexts): StoredDoc<D, S> {
  return new LazyStoredDoc<D, S>(texts);
}
