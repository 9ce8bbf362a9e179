import { loadConfig } from '../../config/config.ts';
import { allKeys, issueKey, revokeKey, settleKeys } from '../../service/access.ts';
import { openStores } from '../../service/stores.ts';
import { parseStrict, printHelp, usageError } from '../args.ts';

const USAGE = `usage: pulseboard keys issue --owner NAME [--expires ISO_DATE_TIME]
       pulseboard keys revoke KEY_ID
       pulseboard keys list

API keys ('pbk_' + 32 random bytes); only a SHA-256 of each key is stored.
  issue   prints a new key for the owner on stdout, once (keep it: it cannot be shown again),
          and its key id on stderr (what revoke takes);
          a thesis-feed key also needs 'pulseboard owners allow NAME' and 'owners link NAME'
  revoke  refuses the key with that id from the next request on
  list    key id, owner, issue time and state, one key a line (keys are never shown)
Exit status: 0 done, 1 failed, 2 usage error.
`;

const HELP = { help: { type: 'boolean', short: 'h' } } as const;

export async function run(args: string[]): Promise<number> {
  const [action, ...rest] = args;
  if (action === '--help' || action === '-h') return printHelp(USAGE);
  if (action === undefined) return usageError('keys', 'name an action: issue, revoke or list');
  if (action === 'issue') {
    const parsed = parseStrict({
      args: rest,
      options: { owner: { type: 'string' }, expires: { type: 'string' }, ...HELP },
      allowPositionals: false,
    });
    if (!parsed.ok) return usageError('keys', parsed.reason);
    const { owner, expires, help } = parsed.parsed.values;
    if (help) return printHelp(USAGE);
    if (!owner || !/^[A-Za-z0-9._@-]{1,100}$/.test(owner))
      return usageError('keys', 'issue needs --owner NAME (letters, digits, . _ @ -; at most 100)');
    if (expires !== undefined && Number.isNaN(Date.parse(expires)))
      return usageError('keys', '--expires must be an ISO 8601 date-time');
    const config = loadConfig();
    const stores = await openStores(config);
    try {
      const issued = await issueKey(stores, owner, {
        expiresAt: expires === undefined ? null : new Date(expires).toISOString(),
      });
      process.stdout.write(`${issued.key}\n`);
      // The id on stderr, so that KEY=$(pulseboard keys issue …) still captures the key alone.
      process.stderr.write(
        `key id ${issued.keyId} (owner ${owner}); revoke it with: pulseboard keys revoke ${issued.keyId}\n`,
      );
      return 0;
    } finally {
      await stores.close();
    }
  }
  if (action === 'revoke') {
    const parsed = parseStrict({ args: rest, options: HELP, allowPositionals: true });
    if (!parsed.ok) return usageError('keys', parsed.reason);
    if (parsed.parsed.values.help) return printHelp(USAGE);
    const positionals = parsed.parsed.positionals;
    if (positionals.length !== 1)
      return usageError('keys', 'revoke needs exactly one KEY_ID (see pulseboard keys list)');
    const keyId = positionals[0]!;
    const config = loadConfig();
    const stores = await openStores(config);
    try {
      const result = await revokeKey(stores, keyId);
      if (!result.ok) {
        process.stderr.write(`${result.reason}\n`);
        return 1;
      }
      process.stdout.write(`revoked ${keyId}\n`);
      return 0;
    } finally {
      await stores.close();
    }
  }
  if (action === 'list') {
    const parsed = parseStrict({ args: rest, options: HELP, allowPositionals: false });
    if (!parsed.ok) return usageError('keys', parsed.reason);
    if (parsed.parsed.values.help) return printHelp(USAGE);
    const config = loadConfig();
    const stores = await openStores(config);
    try {
      await settleKeys(stores);
      for await (const doc of allKeys(stores.store)) {
        const state = doc.revokedAt
          ? `revoked ${doc.revokedAt}`
          : doc.expiresAt
            ? `expires ${doc.expiresAt}`
            : 'active';
        process.stdout.write(`${doc.keyId}\t${doc.owner}\tissued ${doc.issuedAt}\t${state}\n`);
      }
      return 0;
    } finally {
      await stores.close();
    }
  }
  return usageError('keys', `unknown action '${action}'; use issue, revoke or list`);
}
