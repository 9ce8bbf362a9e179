/**
 * A follower sample with its instant parsed once, when it is made: every sighting searches a project's
 * samples by time, and Date.parse was a replay's hot spot. The instant is a private field, so JSON (the
 * stored state) and jsonEqual see `at` and `fol` only; a state read back holds plain samples, which
 * `timedSample` turns into these.
 */
export class TimedSample {
  readonly at: string;
  readonly fol: number;
  readonly #instant: number;
  constructor(at: string, fol: number) {
    this.at = at;
    this.fol = fol;
    this.#instant = Date.parse(at);
  }
  get instant(): number {
    return this.#instant;
  }
}

export const timedSample = (sample: { readonly at: string; readonly fol: number }): TimedSample =>
  sample instanceof TimedSample ? sample : new TimedSample(sample.at, sample.fol);

export const instantOf = (sample: { readonly at: string }): number =>
  sample instanceof TimedSample ? sample.instant : Date.parse(sample.at);
