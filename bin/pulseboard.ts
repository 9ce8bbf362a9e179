#!/usr/bin/env -S node --disable-warning=ExperimentalWarning
/**
 * The `pulseboard` command line (DESIGN §7). Each command lives in bin/commands/<name>.ts and
 * exports `run(args: string[]): Promise<number>` (the exit status).
 */
type Command = { summary: string; load: () => Promise<{ run: (args: string[]) => Promise<number> }> };

const commands: Record<string, Command> = {
  serve: { summary: 'serve the API and MCP endpoint (npm start)', load: () => import('./commands/serve.ts') },
  keys: { summary: 'keys issue --owner NAME | keys revoke KEY_ID | keys list', load: () => import('./commands/keys.ts') },
  owners: { summary: 'owners allow|deny|link|unlink NAME', load: () => import('./commands/owners.ts') },
  ingest: { summary: 'ingest FILE… | - (NDJSON source messages)', load: () => import('./commands/ingest.ts') },
  replay: { summary: 'replay [--batch-size N] (rebuild every read model beside the live one, then switch)', load: () => import('./commands/replay.ts') },
  export: { summary: 'export --from ISO --to ISO [--types P,…] [--include-private] [--out FILE|-] (events as NDJSON)', load: () => import('./commands/export.ts') },
  generate: { summary: 'generate --projects N [--seed S] … (synthetic NDJSON)', load: () => import('./commands/generate.ts') },
};

function usage(): string {
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`);
  return `usage: pulseboard <command> [args]\n\ncommands:\n${lines.join('\n')}\n`;
}

const [name, ...args] = process.argv.slice(2);
const command = name === undefined ? undefined : commands[name];
if (!command) {
  process.stderr.write(usage());
  process.exitCode = name === undefined || name === '--help' ? 0 : 2;
} else {
  try {
    const module = await command.load();
    process.exitCode = await module.run(args);
  } catch (error) {
    // A command that could not even start (a store unreachable, a driver refusing its settings) says so in one line.
    process.stderr.write(`pulseboard ${name}: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
