/**
 * The texts a commit sends joined (readmodels/postgres/postgres-joined-texts.ts) come out of PostgreSQL
 * as the same texts in the same order, whatever JSON they hold; one that could not be split back is refused.
 */
import assert from 'node:assert/strict';
import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { joinTexts, splitTexts } from '../../readmodels/postgres/postgres-joined-texts.ts';
import { POSTGRES_URL, postgresSkipReason } from '../support/postgres.ts';
import { skipFor } from '../support/skip.ts';

const skip = await postgresSkipReason();

describe('PostgreSQL joined texts', skipFor(skip), () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
  });

  const roundTrip = async (texts: string[]): Promise<string[]> =>
    (await client.query<{ t: string[] }>(`SELECT ${splitTexts('$1')} AS t`, [joinTexts(texts)])).rows[0]!.t;

  it('every text back, in order', async () => {
    const values = [
      { a: 'quotes " and \\ backslashes', b: [1, 2, { c: null }] },
      'line\nbreak, tab\t, \u0001 and \u0000 escaped by JSON',
      'é 🚀 ',
      {},
      '',
      { ',': '{"}' },
    ];
    const texts = values.map((v) => JSON.stringify(v));
    assert.deepEqual(await roundTrip(texts), texts);
    assert.deepEqual(await roundTrip([]), []);
    assert.deepEqual(await roundTrip(['{}']), ['{}']);
  });

  it('a text holding U+0001, or an empty one, is refused before it is sent', () => {
    assert.throws(() => joinTexts(['{}', 'a\u0001b']), TypeError);
    assert.throws(() => joinTexts(['']), TypeError);
  });
});
