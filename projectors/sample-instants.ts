/**
 * A follower sample's instant, parsed once per sample object: every sighting searches a project's
 * samples, and Date.parse was a replay's hot spot. Kept beside the objects, never written onto them.
 */
const instants = new WeakMap<{ readonly at: string }, number>();

export function instantOf(sample: { readonly at: string }): number {
  let instant = instants.get(sample);
  if (instant === undefined) {
    instant = Date.parse(sample.at);
    instants.set(sample, instant);
  }
  return instant;
}
