import { v5 as uuidv5, v4 as uuidv4 } from 'uuid';

/** Fixed namespace: event ids derived from a source message are the same on every machine. */
export const EVENT_ID_NAMESPACE = '6f1c2a4e-9d3b-5c7a-8e21-4b0d9f3a7c55';

/** UUID v5 of the source message's type and id (docs/source-messages.md): a message sent twice is stored once. */
export function sourceEventId(type: string, messageId: string): string {
  return uuidv5(`${type}\u0000${messageId}`, EVENT_ID_NAMESPACE);
}

/** Commands issued by this service (keys, asks, thesis requests) draw fresh ids. */
export function commandEventId(): string {
  return uuidv4();
}
