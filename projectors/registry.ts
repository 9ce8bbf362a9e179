import { keysProjector, ownersProjector } from './access.ts';
import { callIndexProjector, callsCollectorProjector, callsProjector } from './calls.ts';
import { contextsProjector } from './contexts.ts';
import { anyProjector, type Projector } from './projector.ts';
import { projectsProjector } from './projects.ts';
import { pulseProjector } from './pulse.ts';

/** Every read model the service keeps, each written by one ordered projector. */
export const projectors: readonly Projector[] = [
  anyProjector(projectsProjector),
  anyProjector(contextsProjector),
  anyProjector(keysProjector),
  anyProjector(ownersProjector),
  anyProjector(callsProjector),
  anyProjector(callIndexProjector),
  anyProjector(callsCollectorProjector),
  anyProjector(pulseProjector),
];
