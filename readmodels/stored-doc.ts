export type StoredDoc<D = unknown, S = unknown> = {
  id: string;
  /** The public, response-shaped document. */
  doc: D;
  /**
   * `doc` as JSON text, exactly as the projector serialised it: read paths splice it into responses
   * without parsing and re-serialising (it is what `JSON.stringify(doc)` gives).
   */
  json: string;
  /**
   * `json` as UTF-8 bytes. An adapter that reads the bytes (SQLite) hands them over as they are and
   * makes `json` from them only when asked: a response made of stored documents is written from these
   * bytes, never decoded to text and encoded back.
   */
  utf8: Uint8Array;
  /**
   * Projector-private state needed for later folds (follower history, claim positions …); never served.
   * Only `get` and `getMany` read it; listings (`list`, `listKeyset`, `delta`) never fetch it and carry null.
   */
  state: S;
  /** Global position of the event that last changed `doc`. */
  seq: number;
  /** recordedAt of that event. */
  writtenAt: string;
  /** Listing order, newest first: ORDER BY sortKey DESC, id DESC. */
  sortKey: string;
  /**
   * One filterable attribute (e.g. `dossier` / `no_dossier`, `visible` / `suppressed`).
   * Documents that must not be served yet use a facet no query asks for (e.g. `pending`).
   */
  facet: string;
  /** Lookup keys: index name → values (e.g. handle → ['foo']). */
  keys: Record<string, string[]>;
};

/** A page of a listing and the listing's exact total, read from one snapshot of the store. */
export type ListPage<D> = { total: number; docs: StoredDoc<D>[] };

/** A stored row's texts, as an adapter reads them (`doc` as text or as its UTF-8 bytes); `state` is undefined in listing rows. */
export type StoredTexts = {
  id: string;
  doc: string | Uint8Array;
  state: string | undefined;
  seq: number;
  writtenAt: string;
  sortKey: string;
  facet: string;
  keys: string;
};

const UNPARSED = Symbol('unparsed');
// Stored texts are well-formed (JSON.stringify escapes lone surrogates), so no replacement ever happens.
const utf8Decoder = new TextDecoder();

/**
 * A stored document whose `doc`, `state` and `keys` are parsed on first access: read paths that
 * write `json` out parse nothing. Listing rows are read without `state` (never served) and carry null.
 */
class LazyStoredDoc<D, S> implements StoredDoc<D, S> {
  readonly id: string;
  readonly seq: number;
  readonly writtenAt: string;
  readonly sortKey: string;
  readonly facet: string;
  #text: string | undefined;
  #utf8: Uint8Array | undefined;
  #stateText: string | undefined;
  #keysText: string;
  #doc: D | typeof UNPARSED = UNPARSED;
  #state: S | typeof UNPARSED = UNPARSED;
  #keys: Record<string, string[]> | undefined;

  constructor(texts: StoredTexts) {
    this.id = texts.id;
    if (typeof texts.doc === 'string') this.#text = texts.doc;
    else this.#utf8 = texts.doc;
    this.seq = texts.seq;
    this.writtenAt = texts.writtenAt;
    this.sortKey = texts.sortKey;
    this.facet = texts.facet;
    this.#stateText = texts.state;
    this.#keysText = texts.keys;
  }

  get json(): string {
    this.#text ??= utf8Decoder.decode(this.#utf8);
    return this.#text;
  }

  get utf8(): Uint8Array {
    this.#utf8 ??= Buffer.from(this.#text!, 'utf8');
    return this.#utf8;
  }

  get doc(): D {
    if (this.#doc === UNPARSED) this.#doc = JSON.parse(this.json) as D;
    return this.#doc;
  }

  get state(): S {
    if (this.#state === UNPARSED)
      this.#state = (this.#stateText === undefined ? null : JSON.parse(this.#stateText)) as S;
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

/** A stored document listed under another order key (e.g. an index entry's); everything else is the document's own, parsed only if asked for. */
class ResortedDoc<D, S> implements StoredDoc<D, S> {
  readonly #of: StoredDoc<D, S>;
  readonly sortKey: string;
  constructor(of: StoredDoc<D, S>, sortKey: string) {
    this.#of = of;
    this.sortKey = sortKey;
  }
  get id(): string {
    return this.#of.id;
  }
  get json(): string {
    return this.#of.json;
  }
  get utf8(): Uint8Array {
    return this.#of.utf8;
  }
  get doc(): D {
    return this.#of.doc;
  }
  get state(): S {
    return this.#of.state;
  }
  get seq(): number {
    return this.#of.seq;
  }
  get writtenAt(): string {
    return this.#of.writtenAt;
  }
  get facet(): string {
    return this.#of.facet;
  }
  get keys(): Record<string, string[]> {
    return this.#of.keys;
  }
}

export function withSortKey<D, S>(stored: StoredDoc<D, S>, sortKey: string): StoredDoc<D, S> {
  return new ResortedDoc(stored, sortKey);
}
