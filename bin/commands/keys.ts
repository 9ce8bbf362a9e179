import { loadConfig } from '../../config/config.ts';
import { issueKey, revokeKey, settleKeys } from '../../service/access.ts';
import { openStores } from '../../service/stores.ts';
import { KEYS_COLLECTION, type KeyDoc } from '../../projectors/access.ts';

const USAGE = 'usage: pulseboard keys issue --owner NAME [--expires ISO_DATE_TIME] | keys revoke KEY_ID | keys list\n';

export async function run(args: string[]): Promise<number> {
  const [action, ...rest] = args;
  const config = loadConfig();
  if (action === 'issue') {
    const owner = valueOf(rest, '--owner');
    const expires = valueOf(rest, '--expires');
    if (!owner || !/^[A-Za-z0-9._@-]{1,100}$/.test(owner)) {
      process.stderr.write(`keys issue needs --owner NAME (letters, digits, . _ @ -; at most 100)\n${USAGE}`);
      return 2;
    }
    if (expires !== undefined && Number.isNaN(Date.parse(expires))) {
      process.stderr.write('--expires must be an ISO 8601 date-time\n');
      return 2;
    }
    const stores = await openStores(config);
    try {
      const issued = await issueKey(stores, owner, { expiresAt: expires === undefined ? null : new Date(expires).toISOString() });
      process.stdout.write(`${issued.key}\n`);
      return 0;
    } finally {
      await stores.close();
    }
  }
  if (action === 'revoke') {
    const keyId = rest[0];
    if (!keyId) {
      process.stderr.write(USAGE);
      return 2;
    }
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
    const stores = await openStores(config);
    try {
      await settleKeys(stores);
      const rows = await stores.store.list<KeyDoc>(KEYS_COLLECTION, { offset: 0, limit: 100_000 });
      for (const { doc } of rows) {
        const state = doc.revokedAt ? `revoked ${doc.revokedAt}` : doc.expiresAt ? `expires ${doc.expiresAt}` : 'active';
        process.stdout.write(`${doc.keyId}\t${doc.owner}\tissued ${doc.issuedAt}\t${state}\n`);
      }
      return 0;
    } finally {
      await stores.close();
    }
  }
  process.stderr.write(USAGE);
  return 2;
}

function valueOf(args: string[], flag: string): string | undefined {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
}
