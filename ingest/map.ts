import { sourceEventId } from '../events/ids.ts';
import type { SourceEventData, SourcePayload, SourceType } from '../events/source.ts';
import { streams } from '../events/streams.ts';
import type { NewEvent } from '../eventstore/port.ts';
import { THESIS_TEXT_MAX } from '../readmodels/schemas.ts';
import type { SourceMessage } from './messages.ts';

export type IngestSource = 'ndjson' | 'kafka';
export type StreamEvent = { stream: string; event: NewEvent };

/** Handles are stored without the leading @ (docs/source-messages.md); look-ups ignore case, so case is kept. */
export function normalizeHandle(handle: string): string {
  return handle.replace(/^@+/, '');
}

function shorteningNote(sourceUrl: string): string {
  const note = `\n\n[Shortened: the original post is at ${sourceUrl}]`;
  // A source URL so long that it would crowd out the text is referred to by field name instead.
  return note.length <= THESIS_TEXT_MAX / 4
    ? note
    : '\n\n[Shortened: the original post is at the sourceUrl of this call]';
}

/**
 * Fits a thesis into THESIS_TEXT_MAX characters (UTF-16 code units, as zod counts them): the text
 * is cut and an explicit note pointing at `sourceUrl` is appended, never splitting a surrogate pair.
 */
export function fitThesisText(text: string, sourceUrl: string): string {
  if (text.length <= THESIS_TEXT_MAX) return text;
  const note = shorteningNote(sourceUrl);
  let cut = THESIS_TEXT_MAX - note.length;
  const last = text.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut -= 1;
  return text.slice(0, cut) + note;
}

const byProject = (data: { projectId: string }) => streams.project(data.projectId);
const byCall = (data: { callId: string }) => streams.call(data.callId);

/** Every source type names its stream here; the mapped type makes a new type without a rule a compile error. */
const streamRules: { [T in SourceType]: (data: SourcePayload<T>) => string } = {
  'project.sighted': byProject,
  'rival.listed': byProject,
  'followers.observed': byProject,
  'dossier.written': byProject,
  'onchain.checked': byProject,
  'calltracker.checked': byProject,
  'vote.cast': byProject,
  'research.updated': byProject,
  'ask.updated': byProject,
  'call.recorded': (data) => streams.call(data.id),
  'call.suppressed': byCall,
  'call.restored': byCall,
  'calls.collected': () => streams.callsCollector(),
  'pulse.published': (data) => streams.pulse(data.card.beat),
};

function streamOf(message: SourceMessage): string {
  return (streamRules[message.type] as (data: unknown) => string)(message.data);
}

/** The stored event data: the payload, normalised, plus the time the source observed it. */
function eventData(message: SourceMessage): SourceEventData<SourceType> {
  const at = message.at;
  switch (message.type) {
    case 'project.sighted': {
      const { handle } = message.data;
      return typeof handle === 'string'
        ? { ...message.data, handle: normalizeHandle(handle), at }
        : { ...message.data, at };
    }
    case 'followers.observed':
      return { ...message.data, handle: normalizeHandle(message.data.handle), at };
    case 'call.recorded':
      return { ...message.data, thesisText: fitThesisText(message.data.thesisText, message.data.sourceUrl), at };
    default:
      return { ...message.data, at };
  }
}

/** A validated message → the events to append (today always one; the shape allows fan-out). */
export function mapMessage(message: SourceMessage, source: IngestSource): StreamEvent[] {
  return [
    {
      stream: streamOf(message),
      event: {
        id: sourceEventId(message.type, message.id),
        type: message.type,
        data: eventData(message),
        metadata: { source, messageId: message.id },
      },
    },
  ];
}
