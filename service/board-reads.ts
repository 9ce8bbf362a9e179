import type { Caller } from './caller.ts';
import { ok, type Result } from './errors.ts';
import type { HistoryBoardService } from './history-board.ts';
import { jsonBody, type JsonBody } from './json-body.ts';
import type { ProjectRead, ProjectsService, WaitOptions } from './projects.ts';
import type { ProjectSearchResult, SearchService } from './search.ts';
import type { BoardPage, SyncPage } from '../readmodels/schemas.ts';
import type {
  BoardPageAsOf,
  ProjectReadAsOf,
  ProjectSearchAsOf,
  SyncPageChanges,
} from '../readmodels/history-schemas.ts';

/**
 * The board's reads as every transport calls them: live, or from the history model when the query
 * names a point (`asOf`) or asks for changes (`include=changes`). REST and MCP hold no such choice.
 */
export type BoardReads = {
  list(
    query: unknown,
    options?: WaitOptions,
  ): Promise<Result<JsonBody<BoardPage | SyncPage | BoardPageAsOf | SyncPageChanges>>>;
  project(caller: Caller, params: unknown, query: unknown): Promise<Result<JsonBody<ProjectRead | ProjectReadAsOf>>>;
  search(caller: Caller, query: unknown): Promise<Result<JsonBody<ProjectSearchResult | ProjectSearchAsOf>>>;
};

export function createBoardReads(deps: {
  projects: ProjectsService;
  search: SearchService;
  history: HistoryBoardService;
}): BoardReads {
  const { projects, search, history } = deps;
  return {
    list: (query, options = {}) =>
      history.readsList(query) ? history.list(query, options) : projects.list(query, options),
    project: (caller, params, query) =>
      history.readsPast(query) ? history.project(caller, params, query) : projects.get(caller, params, query),
    async search(caller, query) {
      if (!history.readsPast(query)) return search.search(caller, query);
      const past = await history.search(caller, query);
      return past.ok ? ok(jsonBody<ProjectSearchAsOf, never>(past.value)) : past;
    },
  };
}
