import { loadConfig } from '../../config/config.ts';
import { changeOwner, type OwnerChange } from '../../service/access.ts';
import { openStores } from '../../service/stores.ts';

const USAGE = 'usage: pulseboard owners allow|deny|link|unlink NAME\n';
const CHANGES: readonly OwnerChange[] = ['allow', 'deny', 'link', 'unlink'];

export async function run(args: string[]): Promise<number> {
  const [action, owner] = args;
  if (!CHANGES.includes(action as OwnerChange) || !owner) {
    process.stderr.write(USAGE);
    return 2;
  }
  const stores = await openStores(loadConfig());
  try {
    await changeOwner(stores, owner, action as OwnerChange);
    process.stdout.write(`${action} ${owner}\n`);
    return 0;
  } finally {
    await stores.close();
  }
}
