import type { Config } from '../config/config.ts';
import { projectors } from '../projectors/registry.ts';
import { createAccess, type Access } from './access.ts';
import { createGuard, type Guard } from './guard.ts';
import { createHealth, type Health } from './health.ts';
import { createProjectsService, type ProjectsService } from './projects.ts';
import { createRateGate } from './rate/gate.ts';
import type { RateLimiter } from './rate/port.ts';
import type { Stores } from './stores.ts';

/** Everything the transports call. Transports hold no business rules; these do. */
export type Services = {
  config: Config;
  stores: Stores;
  access: Access;
  guard: Guard;
  health: Health;
  projects: ProjectsService;
  now: () => Date;
};

export function createServices(deps: { config: Config; stores: Stores; limiter: RateLimiter; now?: () => Date }): Services {
  const now = deps.now ?? (() => new Date());
  const { log, store } = deps.stores;
  const access = createAccess(log, now);
  return {
    config: deps.config,
    stores: deps.stores,
    access,
    guard: createGuard(access, createRateGate(deps.limiter)),
    health: createHealth({ log, store, collections: projectors.map((p) => p.collection), limiter: deps.limiter }),
    projects: createProjectsService({ log, store, access, now }),
    now,
  };
}
