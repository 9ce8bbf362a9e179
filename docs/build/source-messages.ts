/**
 * Renders docs/source-messages.md from the zod schemas that validate source messages
 * (events/source.ts, ingest/messages.ts): the field tables, limits and enums are generated, so the
 * reference cannot drift from what ingest accepts; the prose per type is written here and keyed by
 * type, so a new message type does not type-check until it is described.
 * `node docs/build/source-messages.ts` rewrites the file; test/docs/source-messages.test.ts checks it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { annotateDescriptions } from '../../api/openapi.ts';
import { BEATS } from '../../config/beats.ts';
import { sourcePayloads, sourceTypes, type SourceType } from '../../events/source.ts';
import { envelopeSchema, MESSAGE_ID_MAX } from '../../ingest/messages.ts';
import { apiDocs } from '../../readmodels/descriptions.ts';
import { callRecordSchema, callTokenSchema } from '../../readmodels/schemas.ts';
import { examples } from '../../test/ingest/examples.ts';

export const SOURCE_MESSAGES_FILE = join(import.meta.dirname, '../source-messages.md');

type Json = Record<string, unknown>;

/** What each message type does to the read models (the rules zod cannot express are stated here). */
const EFFECTS: Record<SourceType, string> = {
  'project.sighted':
    'The first sighting of a `projectId` sets `firstSeenByUs = at` and `entry = {at, fol}`; the project is listed from then on. Later sightings update the fields they carry. A sighting older than the newest one already applied only feeds the follower history (for `vel`), never the current fields. `handle` is stored without a leading `@` and must not be empty (send null for a project without a handle); handle look-ups ignore case.',
  'rival.listed':
    '`rival.lead` becomes the ISO 8601 duration from `firstSeenByUs` to `at` when `firstSeenByUs` is earlier, otherwise null. Only the first listing counts.',
  'followers.observed':
    '`followerStats` is the observation with the latest `checkedAt` that is not later than `at`. `source` must equal the configured follower provider (`PULSEBOARD_FOLLOWER_PROVIDER`, default `followerscope`); any other source is rejected.',
  'dossier.written':
    "The project's `dossier` is replaced (its `onchain` snapshot may be null); `context.freshness.dossierAt = at`; `research.hasDossier = true`.",
  'onchain.checked':
    '`context.freshness.onchainCheckedAt = at`; when a dossier exists, its `onchain` snapshot is replaced.',
  'calltracker.checked':
    "Sets the project's `calltracker` summary with `checkedAt = at` and `multiple = mcap / firstMcap`; the first-call fields and `multiple` are null unless `historyComplete`. `posts` must be null when `status` is `identity_unknown` or `identity_mismatch`, and 0 when it is `checked_no_match`; otherwise the message is rejected. `context.freshness.ggCheckedAt = at`.",
  'vote.cast':
    'One standing vote per voter: a later vote of the same voter replaces the earlier one, `none` withdraws it. `votes.up` / `votes.down` count the standing votes; `voters` lists the 20 most recent voters per side.',
  'research.updated': 'Sets `context.research` (a project without any record reads as `not_requested`).',
  'ask.updated':
    'The ask with that id (created by a research ask, or created here with `question` null when unknown) gets the status and answer, and `answeredAt = at` once answered.',
  'call.recorded':
    'A call record, stored as sent; a later message with the same call `id` replaces it (an edit). The tokens carry no `project` link (it is computed at read time). A `thesisText` over 12,000 characters is shortened to fit, ending with an explicit note that the original is at `sourceUrl`. Thesis text is private: it appears only in the call-record reads, never in logs, errors or exports.',
  'call.suppressed':
    'The call disappears from listings and detail reads (404) until a `call.restored` with the same `callId`.',
  'call.restored': 'Undoes a suppression.',
  'calls.collected': "Sets the call collection's freshness (`CallFreshness` in the call-record pages).",
  'pulse.published': `The beat's current pulse card. \`card.beat\` must be a configured beat id: ${BEATS.map((b) => `\`${b.id}\``).join(', ')}.`,
};

/**
 * What the fields that exist only in source messages mean, by type and field path. Fields shared
 * with the API's response shapes (a dossier, an on-chain snapshot, a caller …) take their meaning
 * from readmodels/descriptions.ts, like the OpenAPI document; a test fails on a field with neither.
 */
const FIELD_MEANINGS: Record<SourceType | 'envelope', Record<string, string>> = {
  envelope: {
    type: 'The message type: one of the types below.',
    id: 'The message id, unique within its type at the source.',
    at: 'When the source observed what it reports.',
    data: "The type's payload (below).",
  },
  'project.sighted': {
    projectId: 'The stable project id (the board matches on it).',
    handle: 'Social handle; a leading @ is dropped. Must not be empty: send null for none.',
    identity: 'The public identity submitted for the project.',
    name: 'Display name.',
    pfp: 'Profile image URL.',
    fol: 'Follower count at this sighting.',
    why: 'One line on why the project reached the board.',
    bio: 'Profile bio.',
  },
  'rival.listed': { projectId: 'The project the rival feed listed.' },
  'followers.observed': {
    projectId: 'The project observed.',
    source: 'The follower data provider; must equal PULSEBOARD_FOLLOWER_PROVIDER.',
    handle: 'The handle the provider observed.',
    value: 'Followers counted.',
    checkedAt: 'When the provider counted them.',
  },
  'dossier.written': { projectId: 'The project researched.', dossier: 'The dossier, replacing any earlier one.' },
  'onchain.checked': { projectId: 'The project checked.', onchain: 'The on-chain snapshot.' },
  'calltracker.checked': {
    projectId: 'The project looked up.',
    status: 'Outcome of the look-up.',
    historyComplete: 'Whether the complete, orderable call history was verified.',
    posts: 'Verified calls: null when status is identity_unknown or identity_mismatch, 0 when checked_no_match.',
    firstAt: 'When the token was first called.',
    firstMcap: 'Market cap in USD at the first call.',
    firstCaller: 'Call-tracker handle of the first caller.',
    latestAt: 'When the token was most recently called.',
    mcap: 'Current market cap in USD.',
  },
  'vote.cast': {
    projectId: 'The project voted on.',
    voterId: "The voter's stable id: a later vote of the same voter replaces this one.",
    name: "The voter's display name (shown only to allowlisted key owners).",
    avatar: "The voter's avatar URL (shown only to allowlisted key owners).",
    direction: 'up, down, or none to withdraw the vote.',
  },
  'research.updated': {
    projectId: 'The project.',
    state: 'Where research stands.',
    nextEligibleAt: 'When research may next be requested, if limited.',
  },
  'ask.updated': {
    projectId: 'The project asked about.',
    askId: 'The ask (created by ask_researcher, or created here when unknown).',
    status: 'queued, researching, answered or failed.',
    answer: 'The answer, once answered.',
  },
  'call.recorded': {
    thesisText:
      "The author's thesis (private). Over 12,000 characters it is shortened with a note pointing at sourceUrl.",
    tokens: 'The tokens called (1–20), without the project link (computed when read).',
  },
  'call.suppressed': { callId: 'The call to hide.' },
  'call.restored': { callId: 'The call to show again.' },
  'calls.collected': {
    checkedAt: 'The latest collector attempt.',
    completeAt: 'The last completed collection checkpoint.',
    lastAttemptComplete: 'Whether the latest attempt completed.',
  },
  'pulse.published': { card: 'The card; card.beat must be a configured beat id.' },
};

/** call.recorded is the API's call record (extended) with its tokens' `project` omitted: the same meanings. */
const CALL_FIELDS = apiDocs.get(callRecordSchema)?.fields ?? {};
const TOKEN_FIELDS = apiDocs.get(callTokenSchema)?.fields ?? {};

const INTEGER_LIMIT = Number.MAX_SAFE_INTEGER;

/** A one-cell description of a JSON Schema: type, nullability, enum, format and limits. */
function typeText(schema: Json): string {
  if (Array.isArray(schema.anyOf)) {
    const options = schema.anyOf as Json[];
    const nonNull = options.filter((o) => o.type !== 'null');
    const text = nonNull.map(typeText).join(' or ');
    return nonNull.length < options.length ? `${text} or null` : text;
  }
  if (Array.isArray(schema.enum)) return (schema.enum as unknown[]).map((v) => `\`${JSON.stringify(v)}\``).join(', ');
  if (schema.const !== undefined) return `\`${JSON.stringify(schema.const)}\``;
  const type = typeof schema.type === 'string' ? schema.type : 'any JSON value';
  const notes: string[] = [];
  if (schema.format === 'date-time') notes.push('ISO 8601 date-time with Z or an offset');
  else if (schema.format === 'uuid') notes.push('UUID');
  else if (typeof schema.format === 'string') notes.push(schema.format);
  if (typeof schema.minLength === 'number' && schema.minLength > 0)
    notes.push(`at least ${schema.minLength} character${schema.minLength === 1 ? '' : 's'}`);
  if (typeof schema.maxLength === 'number') notes.push(`at most ${schema.maxLength.toLocaleString('en')} characters`);
  if (typeof schema.minimum === 'number') notes.push(`≥ ${schema.minimum}`);
  if (typeof schema.maximum === 'number' && schema.maximum !== INTEGER_LIMIT) notes.push(`≤ ${schema.maximum}`);
  if (type === 'array') {
    const items = schema.items as Json | undefined;
    const count: string[] = [];
    if (typeof schema.minItems === 'number' && schema.minItems > 0) count.push(`at least ${schema.minItems}`);
    if (typeof schema.maxItems === 'number') count.push(`at most ${schema.maxItems}`);
    return `array${count.length > 0 ? ` (${count.join(', ')})` : ''} of ${items ? typeText(items) : 'anything'}`;
  }
  return notes.length > 0 ? `${type} (${notes.join(', ')})` : type;
}

/** The object schema inside a (possibly nullable, possibly array) schema, to list its fields. */
function objectInside(schema: Json): Json | null {
  if (schema.type === 'object' && schema.properties) return schema;
  if (schema.type === 'array' && schema.items) return objectInside(schema.items as Json);
  if (Array.isArray(schema.anyOf)) {
    for (const option of schema.anyOf as Json[]) {
      const inner = objectInside(option);
      if (inner) return inner;
    }
  }
  return null;
}

type Row = { path: string; required: boolean; type: string; meaning: string | undefined };

function rows(schema: Json, prefix: string): Row[] {
  const properties = (schema.properties ?? {}) as Record<string, Json>;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const out: Row[] = [];
  for (const [name, property] of Object.entries(properties)) {
    const path = `${prefix}${name}`;
    const inner = objectInside(property);
    out.push({
      path,
      required: required.has(name),
      meaning: typeof property.description === 'string' ? property.description : undefined,
      type: inner
        ? typeText({ ...property, ...(property.type === 'object' ? { type: 'object' } : {}) }).replace(
            /object/g,
            'object (fields below)',
          )
        : typeText(property),
    });
    if (inner)
      out.push(
        ...rows(
          inner,
          `${path}${property.type === 'array' || (Array.isArray(property.anyOf) && (property.anyOf as Json[]).some((o) => o.type === 'array')) ? '[]' : ''}.`,
        ),
      );
  }
  return out;
}

function meaningOf(type: SourceType | 'envelope', row: Row): string {
  const own = FIELD_MEANINGS[type][row.path] ?? row.meaning;
  const call =
    type !== 'call.recorded'
      ? undefined
      : row.path.startsWith('tokens[].')
        ? TOKEN_FIELDS[row.path.slice('tokens[].'.length)]
        : CALL_FIELDS[row.path];
  const meaning = own ?? call;
  if (meaning === undefined)
    throw new Error(`${type} ${row.path} has no meaning: add it to FIELD_MEANINGS or readmodels/descriptions.ts`);
  return meaning;
}

function table(type: SourceType | 'envelope', schema: z.ZodType): string {
  const rendered = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' }) as Json;
  annotateDescriptions(schema, rendered);
  const cell = (text: string) => text.replace(/\|/g, '\\|');
  const lines = rows(rendered, '').map(
    (r) => `| \`${r.path}\` | ${r.required ? 'yes' : 'no'} | ${cell(r.type)} | ${cell(meaningOf(type, r))} |`,
  );
  return ['| field | required | type and limits | meaning |', '|---|---|---|---|', ...lines].join('\n');
}

export function renderSourceMessages(): string {
  const parts: string[] = [];
  parts.push(`# Source messages

<!-- Generated by docs/build/source-messages.ts from the zod schemas in events/source.ts and
     ingest/messages.ts; edit those (or the prose in the generator), then run
     \`./node_modules/.bin/node docs/build/source-messages.ts\`. A test fails when this file is stale. -->

What the upstream sources send. The same JSON object is one line of an NDJSON file
(\`pulseboard ingest FILE|-\`) or the value of one Kafka message. Ingest validates each message,
turns it into one or more events and appends them to the event log; the projectors fold the events
into the read models the API serves.

A message that fails validation is rejected with its line (or topic, partition and offset), the
field path and the reason (with several bad fields, every path, comma-separated, and each path with
its reason); nothing of it is appended, and the rest of the input goes on. Rejects
go to a dead-letter file (\`<PULSEBOARD_DATA_DIR>/dead-letter.ndjson\`, or \`--dead-letter PATH\`) or
the \`pulseboard.dead-letter\` topic, always with \`thesisText\` withheld, and \`pulseboard ingest\`
exits 1 when any message was rejected. A reason never quotes the rejected input.

## Envelope

\`\`\`json
${JSON.stringify(examples['rival.listed'])}
\`\`\`

${table('envelope', envelopeSchema)}

- \`type\`: one of the ${sourceTypes.length} types below.
- \`id\`: unique within its type at the source (at most ${MESSAGE_ID_MAX} characters). The event id is
  a UUID v5 of \`type\` and \`id\`, so a message sent twice is stored once (reported as duplicate).
- \`at\`: when the source observed what it reports. Read models use it (\`firstSeenByUs\`, freshness),
  and the order of \`at\`, not of arrival, decides which observation is current.
- \`data\`: the type's payload. In \`data\`, a field that is **absent** leaves the stored value as
  it is; a field sent as **null** sets it to null. Unknown fields are rejected everywhere.

## Types

| type | what it does |
|---|---|
${sourceTypes.map((t) => `| [\`${t}\`](#${t.replace(/\./g, '')}) | ${EFFECTS[t].split('. ')[0]!.replace(/\.$/, '')}. |`).join('\n')}
`);
  for (const type of sourceTypes) {
    parts.push(`### ${type}

${EFFECTS[type]}

${table(type, sourcePayloads[type] as z.ZodType)}

Example (one NDJSON line):

\`\`\`json
${JSON.stringify(examples[type])}
\`\`\`
`);
  }
  parts.push(`## Kafka

Set \`KAFKA_BROKERS\` and run \`pulseboard serve --role ingest\` (or \`all\`). It consumes the topics
\`pulseboard.projects\`, \`pulseboard.calls\` and \`pulseboard.pulse\`; key each message by
\`projectId\` / call \`id\` / beat so that one entity's messages stay in order within a partition.
The consumer commits an offset only after the events of every message up to it are appended; a
crash in between re-delivers messages, which the event ids make harmless. Rejected messages go to
\`pulseboard.dead-letter\` with topic, partition, offset, path and reason. While a slow event log
appends a part, the consumer keeps heartbeating, so it stays in its group.

When Kafka cannot be reached at start, \`--role ingest\` exits with status 1 within 30 s and one line
naming the brokers (a restart policy brings it back); \`--role all\` serves the API regardless and
retries Kafka in the background, \`/readyz\` reporting \`degraded\` with \`kafka-ingest\` as \`retrying\`
until the consumer is in its group. Once running, either role rides out a Kafka outage by itself.

## Computed at read time, not stored

- A caller's \`pnl\` is returned as null when its \`checkedAt\` is in the future or at least 24 hours old.
- A call token's \`project\` link: the board project whose dossier token or identity names the same
  chain and contract.
`);
  return parts.join('\n');
}

if (import.meta.main) {
  writeFileSync(SOURCE_MESSAGES_FILE, renderSourceMessages());
  process.stdout.write(`wrote ${SOURCE_MESSAGES_FILE}\n`);
}
