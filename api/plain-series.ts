import type { Metric, Registry } from 'prom-client';

/**
 * The two per-request series (answered requests by operation and status, and their duration by
 * operation) kept as plain numbers. prom-client hashes the label set on every `inc` and `observe`,
 * even on a cached label child; here a request adds to numbers found with one Map look-up per label,
 * and the registry reads them at scrape time as ordinary series, in the text prom-client writes for
 * its own counters and histograms.
 */
export type RequestSeries = {
  record(operation: string, status: number, seconds: number): void;
};

type Described = { name: string; help: string };
type OperationSeries = { byStatus: Map<number, number>; buckets: Float64Array; sum: number; count: number };
type Value = { labels: Record<string, string | number>; value: number; metricName?: string };

/** Lists a metric read from plain numbers: the registry asks a metric only for these members (get, reset, its name). */
function register(
  registry: Registry,
  described: Described,
  type: 'counter' | 'histogram',
  values: () => Value[],
  reset: () => void,
): void {
  const snapshot = async () => ({
    name: described.name,
    help: described.help,
    type,
    values: values(),
    aggregator: 'sum' as const,
  });
  registry.registerMetric({
    name: described.name,
    help: described.help,
    type,
    aggregator: 'sum',
    get: snapshot,
    reset,
  } as unknown as Metric);
}

/** A counter over one label whose values are a fixed set, each exported from the start (at 0 until counted). */
export function createFixedCounter<V extends string>(
  registry: Registry,
  described: Described,
  label: string,
  labelValues: readonly V[],
): { add(value: V): void } {
  const counts = new Map<V, number>(labelValues.map((value) => [value, 0]));
  const values = (): Value[] => [...counts].map(([value, count]) => ({ labels: { [label]: value }, value: count }));
  register(registry, described, 'counter', values, () => {
    for (const value of labelValues) counts.set(value, 0);
  });
  return {
    add(value) {
      counts.set(value, (counts.get(value) ?? 0) + 1);
    },
  };
}

export function createRequestSeries(
  registry: Registry,
  requests: Described,
  duration: Described & { buckets: readonly number[] },
): RequestSeries {
  const bounds = [...duration.buckets].sort((a, b) => a - b);
  const byOperation = new Map<string, OperationSeries>();

  const counterValues = (): Value[] => {
    const values: Value[] = [];
    for (const [operation, series] of byOperation) {
      for (const [status, value] of series.byStatus)
        values.push({ labels: { operation, status: String(status) }, value });
    }
    return values;
  };

  const histogramValues = (): Value[] => {
    const values: Value[] = [];
    for (const [operation, series] of byOperation) {
      let below = 0;
      bounds.forEach((le, i) => {
        below += series.buckets[i]!;
        values.push({ labels: { le, operation }, value: below, metricName: `${duration.name}_bucket` });
      });
      values.push({ labels: { le: '+Inf', operation }, value: series.count, metricName: `${duration.name}_bucket` });
      values.push({ labels: { operation }, value: series.sum, metricName: `${duration.name}_sum` });
      values.push({ labels: { operation }, value: series.count, metricName: `${duration.name}_count` });
    }
    return values;
  };

  register(registry, requests, 'counter', counterValues, () => byOperation.clear());
  register(registry, duration, 'histogram', histogramValues, () => byOperation.clear());

  return {
    record(operation, status, seconds) {
      let series = byOperation.get(operation);
      if (!series)
        byOperation.set(
          operation,
          (series = { byStatus: new Map(), buckets: new Float64Array(bounds.length), sum: 0, count: 0 }),
        );
      series.byStatus.set(status, (series.byStatus.get(status) ?? 0) + 1);
      series.sum += seconds;
      series.count += 1;
      // Above the last bound: only in +Inf, which is the count (as prom-client does).
      for (let i = 0; i < bounds.length; i++) {
        if (seconds <= bounds[i]!) {
          series.buckets[i]! += 1;
          break;
        }
      }
    },
  };
}
