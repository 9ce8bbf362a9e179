/**
 * Preloaded with `--import` (NODE_OPTIONS) into a child process: appends to PULSEBOARD_PACKAGE_TRACE
 * the name of each npm package the process (or a worker thread of it) resolves, once per thread.
 */
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const file = process.env.PULSEBOARD_PACKAGE_TRACE;
const seen = new Set<string>();
if (file) {
  registerHooks({
    resolve(specifier, context, next) {
      const resolved = next(specifier, context);
      const name = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(resolved.url)?.[1];
      if (name && !seen.has(name)) {
        seen.add(name);
        appendFileSync(file, `${name}\n`);
      }
      return resolved;
    },
  });
}
