import { loadConfig } from '../../config/config.ts';
import { changeOwner, type OwnerChange } from '../../service/access.ts';
import { openStores } from '../../service/stores.ts';
import { parseStrict, printHelp, usageError } from '../args.ts';

const USAGE = `usage: pulseboard owners allow|deny|link|unlink NAME

The allowlist and link state of a key owner (the thesis feed needs both allowed and linked).
  allow / deny    put the owner on the allowlist, or take it off
  link / unlink   link the owner's account, or unlink it
Takes effect on the next request, on REST and MCP alike. Exit status: 0 done, 2 usage error.
`;
const CHANGES: readonly OwnerChange[] = ['allow', 'deny', 'link', 'unlink'];

export async function run(args: string[]): Promise<number> {
  const parsed = parseStrict({ args, options: { help: { type: 'boolean', short: 'h' } }, allowPositionals: true });
  if (!parsed.ok) return usageError('owners', parsed.reason);
  if (parsed.parsed.values.help) return printHelp(USAGE);
  const [action, owner, ...extra] = parsed.parsed.positionals;
  if (action === undefined) return usageError('owners', 'name an action: allow, deny, link or unlink');
  if (!CHANGES.includes(action as OwnerChange))
    return usageError('owners', `unknown action '${action}'; use allow, deny, link or unlink`);
  if (!owner) return usageError('owners', `${action} needs the owner's NAME`);
  if (extra.length > 0) return usageError('owners', `unexpected argument '${extra[0]}'`);
  const stores = await openStores(loadConfig());
  try {
    await changeOwner(stores, owner, action as OwnerChange);
    process.stdout.write(`${action} ${owner}\n`);
    return 0;
  } finally {
    await stores.close();
  }
}
