import type { Project } from '../readmodels/schemas.ts';
import type { ReadStore } from '../readmodels/port.ts';
import { PROJECTS_COLLECTION } from '../projectors/projects.ts';
import type { z } from 'zod';
import type { projectSummarySchema } from '../readmodels/schemas.ts';

export type ProjectSummary = z.output<typeof projectSummarySchema>;

/**
 * The compact view of a page of projects: each row's identifying fields and when the archive last
 * wrote it (read from the stored rows in one read; a row written again since the page was read
 * shows that later time).
 */
export async function summarize<P extends { projects: Project[] }>(
  store: ReadStore,
  page: P,
): Promise<Omit<P, 'projects'> & { projects: ProjectSummary[] }> {
  const stored = await store.getMany<Project>(
    PROJECTS_COLLECTION,
    page.projects.map((project) => project.id),
  );
  return {
    ...page,
    projects: page.projects.map((project) => ({
      id: project.id,
      handle: project.handle,
      name: project.name,
      fol: project.fol,
      firstSeenByUs: project.firstSeenByUs,
      hasDossier: project.dossier !== null,
      writtenAt: stored.get(project.id)?.writtenAt ?? project.firstSeenByUs,
    })),
  };
}
