#!/usr/bin/env -S node --disable-warning=ExperimentalWarning
/**
 * The `pulseboard` command line. Each command lives in bin/commands/<name>.ts and exports
 * `run(args: string[]): Promise<number>` (the exit status); each parses its own flags strictly and
 * answers --help on stdout.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

type Command = { summary: string; load: () => Promise<{ run: (args: string[]) => Promise<number> }> };

const commands: Record<string, Command> = {
  serve: { summary: 'serve the API and MCP endpoint (npm start)', load: () => import('./commands/serve.ts') },
  keys: {
    summary: 'keys issue --owner NAME | keys revoke KEY_ID | keys list',
    load: () => import('./commands/keys.ts'),
  },
  owners: { summary: 'owners allow|deny|link|unlink NAME', load: () => import('./commands/owners.ts') },
  ingest: {
    summary: 'ingest FILE… | - (NDJSON source messages, docs/source-messages.md)',
    load: () => import('./commands/ingest.ts'),
  },
  replay: {
    summary: 'replay [--batch-size N] (rebuild every read model beside the live one, then switch)',
    load: () => import('./commands/replay.ts'),
  },
  export: {
    summary: 'export --from ISO --to ISO [--types P,…] [--include-private] [--out FILE|-] (events as NDJSON)',
    load: () => import('./commands/export-command.ts'),
  },
  generate: {
    summary: 'generate --projects N [--seed S] … (synthetic NDJSON)',
    load: () => import('./commands/generate.ts'),
  },
  mirror: {
    summary: 'mirror --url URL --key KEY --to sqlite:FILE|postgres://… [--once] (the board into your store)',
    load: () => import('./commands/mirror.ts'),
  },
};

function usage(): string {
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`);
  return `usage: pulseboard <command> [args]
       pulseboard <command> --help     what a command does and its flags
       pulseboard --version

commands:
${lines.join('\n')}

Configuration comes from environment variables (README.md, "Configuration").
`;
}

function version(): string {
  const manifest = JSON.parse(readFileSync(join(import.meta.dirname, '../package.json'), 'utf8')) as {
    version: string;
  };
  return manifest.version;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined) {
    process.stderr.write(usage());
    return 2;
  }
  if (name === '--help' || name === '-h') {
    process.stdout.write(usage());
    return 0;
  }
  if (name === 'help') {
    // `pulseboard help keys` is `pulseboard keys --help`.
    if (args.length === 0) {
      process.stdout.write(usage());
      return 0;
    }
    return main([args[0]!, '--help']);
  }
  if (name === '--version' || name === '-v') {
    process.stdout.write(`pulseboard ${version()}\n`);
    return 0;
  }
  const command = commands[name];
  if (!command) {
    const what = name.startsWith('-') ? `unknown option '${name}'` : `unknown command '${name}'`;
    process.stderr.write(
      `pulseboard: ${what}; commands: ${Object.keys(commands).join(', ')} (see 'pulseboard --help')\n`,
    );
    return 2;
  }
  try {
    const module = await command.load();
    return await module.run(args);
  } catch (error) {
    // A command that could not even start (a store unreachable, a driver refusing its settings) says so in one line.
    process.stderr.write(`pulseboard ${name}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
