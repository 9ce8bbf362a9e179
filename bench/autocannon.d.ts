/** The part of autocannon's API the benches use (the package ships no types). */
declare module 'autocannon' {
  type Options = {
    url: string;
    method?: 'GET' | 'POST';
    connections?: number;
    duration?: number;
    headers?: Record<string, string>;
    body?: string;
  };
  type Result = {
    requests: { average: number; total: number };
    latency: { p99: number };
    non2xx: number;
    errors: number;
    timeouts: number;
  };
  export default function autocannon(options: Options): Promise<Result>;
}
