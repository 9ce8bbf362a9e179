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
/** Answers that were not the expected 200 (408s under load, refused connections), by status or error code. */
let refused: Record<string, number> = {};
const refuse = (what: string) => void (refused[what] = (refused[what] ?? 0) + 1);

function get(url: string, key: string, onResponse: (res: IncomingMessage) => void): void {
  const req = request(url, { agent: false, headers: { authorization: `Bearer ${key}` } }, onResponse);
  req.on('error', (error: NodeJS.ErrnoException) => refuse(error.code ?? 'error'));
  req.end();
}

/** Requests opened per tick: a burst of thousands of connections at once outruns the server's 10 s head timeout (408). */
const RAMP = 200;
const RAMP_MS = 100;
let polling = true;

/** One long-poll held until it has rows: one that ends empty (its 30 s wait ran out) is sent again, as a client would. */
function poll(base: string, key: string, cursor: string): void {
  get(`${base}/v1/projects?cursor=${cursor}&wait=30`, key, (res) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => (body += chunk));
    res.on('end', () => {
      if (res.statusCode !== 200) return refuse(String(res.statusCode));
      const parsed = JSON.parse(body) as { cursor?: string; projects?: unknown[] };
      if (!parsed.projects || parsed.projects.length === 0) {
        if (polling) poll(base, key, cursor);
        return;
      }
      pollAnswers.push(now());
      if (parsed.cursor) lastCursor = parsed.cursor;
    });
  });
}

process.on('message', async (message: Command) => {
  if (message.cmd === 'polls') {
    for (let n = 0; n < message.count; n++) {
      poll(message.base, message.key, message.cursor);
      if (n % RAMP === RAMP - 1) await new Promise((resolve) => setTimeout(resolve, RAMP_MS));
    }
    process.send?.({ ok: true });
  } else if (message.cmd === 'streams') {
    let opened = 0;
    for (const key of message.keys) {
      if (++opened % (RAMP / message.perKey) === 0) await new Promise((resolve) => setTimeout(resolve, RAMP_MS));
      for (let n = 0; n < message.perKey; n++) {
        get(`${message.base}/v1/projects/changes?since=now`, key, (res) => {
          if (res.statusCode !== 200) refuse(`stream ${res.statusCode}`);
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
    process.send?.({ pollAnswers, streamEvents, cursor: lastCursor, refused });
    pollAnswers = [];
    streamEvents = [];
    refused = {};
  } else if (message.cmd === 'stop') {
    polling = false;
    for (const res of open) res.destroy();
    process.disconnect();
  }
});
