/**
 * `pulseboard export`: the analysts' export (--format) runs in a thread of its own with a bounded
 * heap, so this thread loads only the form it runs (each loads the stores' modules).
 */
export async function run(args: string[]): Promise<number> {
  if (args.some((a) => a === '--format' || a.startsWith('--format=')))
    return (await import('./export-as-of.ts')).runAsOfExport(args);
  return (await import('./export.ts')).run(args);
}
