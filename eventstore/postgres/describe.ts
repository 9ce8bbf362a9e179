/**
 * Host, port and database of a PostgreSQL connection string: what an operator needs to know which
 * server failed, never its credentials (a password may sit in the user part or in `?password=`).
 * Loads no driver, so `serve` can name the server on the embedded path's imports.
 */
export function describePostgres(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    return `${url.hostname || 'localhost'}${url.port ? `:${url.port}` : ''}${url.pathname}`;
  } catch {
    return 'the configured server';
  }
}
