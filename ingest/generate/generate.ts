import type { SourceMessage } from '../messages.ts';
import {
  callEdits,
  callMessages,
  callRestorations,
  callSuppressions,
  collectorCheckpoints,
  hotContractCalls,
  pulseCards,
} from './calls.ts';
import { createContext, type GenerateOptions } from './context.ts';
import { mergeByKey } from './merge.ts';
import { projectMessages } from './projects.ts';

/**
 * The synthetic data set as one lazy, time-ordered sequence of source messages. Nothing is
 * accumulated: each message is computed when asked for, so millions cost no more memory than ten.
 */
export function* generateMessages(options: GenerateOptions): Generator<SourceMessage> {
  const ctx = createContext(options);
  const merged = mergeByKey([
    projectMessages(ctx),
    callMessages(ctx),
    callEdits(ctx),
    callSuppressions(ctx),
    callRestorations(ctx),
    hotContractCalls(ctx),
    collectorCheckpoints(ctx),
    pulseCards(ctx),
  ]);
  for (const { message } of merged) yield message;
}

/**
 * NDJSON lines (each ending in a newline). Key order is fixed by construction, so bytes are too.
 * `observe` sees each message before its line is yielded (the CLI's progress reads its `at`).
 */
export function* generateLines(
  options: GenerateOptions,
  observe?: (message: SourceMessage) => void,
): Generator<string> {
  for (const message of generateMessages(options)) {
    observe?.(message);
    yield `${JSON.stringify(message)}\n`;
  }
}
