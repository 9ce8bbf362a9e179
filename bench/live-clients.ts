/**
 * The client side of bench/live.bench.ts, in a process of its own so the server's CPU is measured
 * alone: holds long-polls and change streams open against the server and reports, on request,
 * when each was answered (absolute times: performance.timeOrigin + now, comparable across processes).
 */
import { request, type IncomingMessage } from 'node:http';

type Command =
  | { cmd: 'polls'; base: string; key: string; cursor: string; count: number }
  | { cmd: 'streams'; base: string; keys: string[]; perKey: number }
  | { cmd: 'collect' }
  | { cmd: 'stop' };

const now = () => performance.timeOrigin + performance.now();
let pollAnswers: number[] = [];
let streamEvents: number[] = [];
let lastCursor = '';
const open: IncomingMessage[] = [];

function get(url: string, key: string, onResponse: (res: IncomingMessage) => void): void {
  const req = request(url, { agent: false, headers: { authorization: `Bearer ${key}` } }, onResponse);
  req.on('error', () => undefined);
  req.end();
}

process.on('message', (message: Command) => {
  if (message.cmd === 'polls') {
    for (let n = 0; n < message.count; n++) {
      get(`${message.base}/v1/projects?cursor=${message.cursor}&wait=30`, message.key, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => {
          pollAnswers.push(now());
          const parsed = JSON.parse(body) as { cursor?: string; projects?: unknown[] };
          if (res.statusCode !== 200 || !parsed.projects || parsed.projects.length === 0)
            process.send?.({ error: `long-poll answered ${res.statusCode} ${body.slice(0, 200)}` });
          if (parsed.cursor) lastCursor = parsed.cursor;
        });
      });
    }
    process.send?.({ ok: true });
  } else if (message.cmd === 'streams') {
    for (const key of message.keys) {
      for (let n = 0; n < message.perKey; n++) {
        get(`${message.base}/v1/projects/changes?since=now`, key, (res) => {
          if (res.statusCode !== 200) process.send?.({ error: `stream answered ${res.statusCode}` });
          open.push(res);
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            if (chunk.includes('\ndata: ')) streamEvents.push(now());
          });
        });
      }
    }
    process.send?.({ ok: true });
  } else if (message.cmd === 'collect') {
    process.send?.({ pollAnswers, streamEvents, cursor: lastCursor });
    pollAnswers = [];
    streamEvents = [];
  } else if (message.cmd === 'stop') {
    for (const res of open) res.destroy();
    process.disconnect();
  }
});
