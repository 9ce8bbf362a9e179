/**
 * Where source messages go on Kafka (docs/source-messages.md, "Kafka"): one topic per message family,
 * each message keyed by its entity so that one entity's messages stay in order within a partition.
 */
export const sourceTopics = {
  projects: 'pulseboard.projects',
  calls: 'pulseboard.calls',
  pulse: 'pulseboard.pulse',
} as const;

export const defaultSourceTopics: readonly string[] = Object.values(sourceTopics);
export const defaultDeadLetterTopic = 'pulseboard.dead-letter';

/** Which source topic a message type belongs to (docs/source-messages.md: one topic per message family). */
export function topicFor(type: string): string {
  if (type.startsWith('call.') || type === 'calls.collected') return sourceTopics.calls;
  if (type.startsWith('pulse.')) return sourceTopics.pulse;
  return sourceTopics.projects;
}

/** The partition key that keeps one entity's messages in order: projectId, call id, or beat. */
export function keyFor(message: { type?: unknown; data?: unknown }): string | null {
  const data =
    typeof message.data === 'object' && message.data !== null ? (message.data as Record<string, unknown>) : {};
  const card = typeof data.card === 'object' && data.card !== null ? (data.card as Record<string, unknown>) : {};
  const candidates = [data.projectId, data.callId, message.type === 'call.recorded' ? data.id : undefined, card.beat];
  const key = candidates.find(
    (candidate): candidate is string => typeof candidate === 'string' && candidate.length > 0,
  );
  if (key !== undefined) return key;
  return message.type === 'calls.collected' ? 'calls-collector' : null;
}
