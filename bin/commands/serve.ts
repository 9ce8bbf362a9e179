export async function run(_args: string[]): Promise<number> {
  process.stderr.write('serve: being written in this commit series\n');
  return 1;
}
