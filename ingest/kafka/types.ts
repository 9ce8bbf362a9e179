/**
 * What the Kafka source needs from ingest. The same types are being written in ingest/pipeline.ts
 * on another branch; these are restated here only so this folder compiles on its own.
 * TODO(lead): once ingest/pipeline.ts is merged, import both types from it and delete this file.
 */
export type IngestOutcome = { status: 'accepted' } | { status: 'duplicate' } | { status: 'rejected'; path: string; reason: string };

export type Ingestor = { ingest(raw: string, source: 'ndjson' | 'kafka'): Promise<IngestOutcome> };
