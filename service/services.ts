import type { Config } from '../config/config.ts';
import { createAccess, type Access } from './access.ts';
import { createCallsService, type CallsService } from './calls.ts';
import { createGuard, type Gate, type Guard } from './guard.ts';
import { createProjectsService, type ProjectsService } from './projects.ts';
import { createPulseService, type PulseService } from './pulse.ts';
import { createSearchService, type SearchService } from './search.ts';
import type { Stores } from './stores.ts';

/** Everything the transports call. Transports hold no business rules; these do. */
export type Services = {
  config: Config;
  stores: Stores;
  access: Access;
  guard: Guard;
  projects: ProjectsService;
  calls: CallsService;
  search: SearchService;
  pulse: PulseService;
  now: () => Date;
};

export function createServices(deps: { config: Config; stores: Stores; gate: Gate; now?: () => Date }): Services {
  const now = deps.now ?? (() => new Date());
  const access = createAccess(deps.stores.log, now);
  const projects = createProjectsService({ log: deps.stores.log, store: deps.stores.store, access, now });
  return {
    config: deps.config,
    stores: deps.stores,
    access,
    guard: createGuard(access, deps.gate),
    projects,
    calls: createCallsService({ store: deps.stores.store, now }),
    search: createSearchService({ store: deps.stores.store, projects, now }),
    pulse: createPulseService({ store: deps.stores.store, now }),
    now,
  };
}
