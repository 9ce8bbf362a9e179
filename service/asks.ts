import { randomUUID } from 'node:crypto';
import type { EventLog } from '../eventstore/port.ts';
import { commandEventId } from '../events/ids.ts';
import type { EventData } from '../events/catalogue.ts';
import { streams } from '../events/streams.ts';
import { ASKS_COLLECTION, type StoredAsks } from '../projectors/asks.ts';
import type { ReadStore } from '../readmodels/port.ts';
import type { AskList, AskReceipt } from '../readmodels/schemas.ts';
import type { Access } from './access.ts';
import type { Caller } from './caller.ts';
import { echoed, errors, fail, ok, type Result } from './errors.ts';
import type { ProjectsService } from './projects.ts';
import { parseParams } from './requests/params.ts';
import { askListParamsSchema, askListQuerySchema, askResearcherSchema } from './requests/asks.ts';

export type AsksService = {
  /** GET /v1/projects/{handle}/ask and researcher_answers: the project's asks, newest first. */
  list(caller: Caller, params: unknown, query?: unknown): Promise<Result<AskList>>;
  /**
   * ask_researcher: appends `ask.asked` (with a question) or `research.requested` (without) to
   * the project's stream. The only write of this service; it only appends.
   */
  ask(caller: Caller, input: unknown): Promise<Result<AskReceipt>>;
};

const NOT_ALLOWLISTED =
  'this operation is open to allowlisted key owners only; ask the operator to allowlist your key owner';

export function createAsksService(deps: {
  log: EventLog;
  store: ReadStore;
  access: Access;
  projects: ProjectsService;
  now: () => Date;
}): AsksService {
  const { log, store, access, projects, now } = deps;

  /** Re-checked on every call: the owner's stream is folded per request. */
  async function allowlisted(caller: Caller): Promise<boolean> {
    return (await access.ownerAccess(caller.owner)).allowlisted;
  }

  return {
    async list(caller, params, query) {
      const p = parseParams(askListParamsSchema, params);
      if (!p.ok) return fail(errors.badRequest(p.message));
      const q = parseParams(askListQuerySchema, query);
      if (!q.ok) return fail(errors.badRequest(q.message));
      // Access before existence, so a refused caller learns nothing about which projects exist.
      if (!(await allowlisted(caller))) return fail(errors.forbidden(NOT_ALLOWLISTED));
      const project = await projects.resolve(p.value.handle);
      if (!project) return fail(errors.notFound(`no project with id or handle '${echoed(p.value.handle)}'`));
      const readAt = now().toISOString();
      const stored = await store.get<StoredAsks>(ASKS_COLLECTION, project.id);
      return ok({ projectId: project.id, asks: stored?.doc.asks ?? [], readAt });
    },

    async ask(caller, input) {
      const parsed = parseParams(askResearcherSchema, input);
      if (!parsed.ok) return fail(errors.badRequest(parsed.message));
      if (!(await allowlisted(caller))) return fail(errors.forbidden(NOT_ALLOWLISTED));
      const project = await projects.resolve(parsed.value.handle);
      if (!project) return fail(errors.notFound(`no project with id or handle '${echoed(parsed.value.handle)}'`));
      const projectId = project.id;
      const id = randomUUID();
      const at = now().toISOString();
      const { question } = parsed.value;
      const event =
        question === undefined
          ? {
              type: 'research.requested',
              data: { projectId, requestId: id, owner: caller.owner, at } satisfies EventData<'research.requested'>,
            }
          : {
              type: 'ask.asked',
              data: { projectId, askId: id, question, owner: caller.owner, at } satisfies EventData<'ask.asked'>,
            };
      const appended = await log.append(streams.project(projectId), [
        { id: commandEventId(), ...event, metadata: { source: 'ask_researcher', keyId: caller.keyId } },
      ]);
      if (!appended.ok) return fail(errors.unavailable('the request could not be stored; retry shortly', 5));
      return ok({ id, projectId, kind: question === undefined ? 'research' : 'question', state: 'queued' });
    },
  };
}
