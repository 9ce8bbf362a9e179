import { keysProjector, ownersProjector } from './access.ts';
import { asksProjector } from './asks.ts';
import { contextsProjector } from './contexts.ts';
import { anyProjector, type Projector } from './projector.ts';
import { projectsProjector } from './projects.ts';
import { thesisProjector } from './thesis.ts';
import { callIndexProjector, callsCollectorProjector, callsProjector } from './calls.ts';
import { pulseProjector } from './pulse.ts';

/** Every read model the service keeps, each written by one ordered projector. */
export const projectors: readonly Projector[] = [
  anyProjector(projectsProjector),
  anyProjector(contextsProjector),
  anyProjector(keysProjector),
  anyProjector(ownersProjector),
  anyProjector(thesisProjector),
  anyProjector(asksProjector),
  anyProjector(callsProjector),
  anyProjector(callIndexProjector),
  anyProjector(callsCollectorProjector),
  anyProjector(pulseProjector),
];
