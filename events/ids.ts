import { hash } from 'node:crypto';
import { v4 as uuidv4 } from 'uuid';

/** Fixed namespace: event ids derived from a source message are the same on every machine. */
export const EVENT_ID_NAMESPACE = '6f1c2a4e-9d3b-5c7a-8e21-4b0d9f3a7c55';

const NAMESPACE_BYTES = Buffer.from(EVENT_ID_NAMESPACE.replaceAll('-', ''), 'hex');

/**
 * UUID v5 of the source message's type and id (docs/source-messages.md): a message sent twice is stored once.
 * RFC 9562 §5.5 computed directly (one SHA-1 of namespace bytes + UTF-8 name, version and variant bits
 * set): the same text the uuid package's v5 gives, at a fraction of its cost per message on ingest.
 */
export function sourceEventId(type: string, messageId: string): string {
  const digest = hash(
    'sha1',
    Buffer.concat([NAMESPACE_BYTES, Buffer.from(`${type}\u0000${messageId}`, 'utf8')]),
    'buffer',
  );
  digest[6] = (digest[6]! & 0x0f) | 0x50;
  digest[8] = (digest[8]! & 0x3f) | 0x80;
  const hex = digest.toString('hex', 0, 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** Commands issued by this service (keys, asks, thesis requests) draw fresh ids. */
export function commandEventId(): string {
  return uuidv4();
}
