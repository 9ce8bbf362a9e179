import type { DatabaseSync, StatementSync } from 'node:sqlite';

/** Statements a connection keeps prepared; past this many the oldest is dropped (prepared again if asked for). */
const STATEMENTS_KEPT = 512;

/** A statement of the connection by its text, prepared once (`rowsAsArrays`: its rows come as arrays). */
export type Prepare = (sql: string, rowsAsArrays?: boolean) => StatementSync;

/**
 * Every statement of a connection prepared once: a store's texts vary only with the number of facets,
 * the page limit and a few flags, a small set.
 */
export function statementCache(db: DatabaseSync): Prepare {
  const statements = new Map<string, StatementSync>();
  return (sql, rowsAsArrays = false) => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      if (rowsAsArrays) statement.setReturnArrays(true);
      if (statements.size >= STATEMENTS_KEPT) statements.delete(statements.keys().next().value!);
      statements.set(sql, statement);
    }
    return statement;
  };
}
