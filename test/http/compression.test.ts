/** The REST operations' compression: negotiation, and bodies compressed from what is kept for them. */
import assert from 'node:assert/strict';
import zlib, { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { describe, it, vi } from 'vitest';
import { compressParts, negotiateEncoding } from '../../transport/compression.ts';
import { bodyWith, partsOf } from '../../service/spliced.ts';

/** A page as the service keeps it: a large body split around its readAt, with a member after readAt. */
function keptPage(readAt: string) {
  const projects = Array.from({ length: 300 }, (_, i) => ({ id: `prj-${i}`, name: `Project ${i} ✓`, followers: i * 37 }));
  const split = partsOf<{ projects: unknown[]; readAt: string; total: number }, never>({ projects, readAt, total: projects.length });
  assert.ok(split && split.parts.tail !== null);
  return split;
}

async function webGunzip(bytes: Buffer): Promise<string> {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Response(stream).text();
}

describe('negotiateEncoding', () => {
  const cases: [Record<string, string>, boolean, string | null][] = [
    [{ 'accept-encoding': 'gzip' }, false, 'gzip'],
    [{ 'accept-encoding': 'gzip, deflate, br' }, false, 'br'],
    [{ 'accept-encoding': 'gzip, deflate, br' }, true, 'gzip'],
    [{ 'accept-encoding': 'br;q=1, gzip;q=0.5' }, true, 'br'],
    [{ 'accept-encoding': 'br' }, true, 'br'],
    [{ 'accept-encoding': '*' }, false, 'gzip'],
    [{ 'accept-encoding': 'X-GZIP' }, false, 'gzip'],
    [{ 'accept-encoding': 'identity' }, false, null],
    [{ 'accept-encoding': 'gzip;q=0, br;q=0' }, false, null],
    [{ 'accept-encoding': 'deflate' }, false, null],
    [{ 'accept-encoding': 'gzip', 'x-no-compression': '' }, false, null],
    [{}, false, null],
  ];
  for (const [headers, gzipFirst, expected] of cases) {
    it(`${JSON.stringify(headers)}${gzipFirst ? ' (gzip first)' : ''} → ${expected}`, () => {
      assert.equal(negotiateEncoding(headers, gzipFirst), expected);
    });
  }
});

describe('compressParts', () => {
  it('gzip: the kept head and a new readAt give the very bytes of the body, for every readAt, to zlib and to a web decoder', async () => {
    const first = keptPage('2026-11-23T04:00:00.000Z');
    for (const readAt of ['2026-11-23T04:00:00.000Z', '2026-11-23T04:00:01.250Z', 'x'.repeat(70_000)]) {
      const body = bodyWith(first.parts, readAt);
      const gz = compressParts(first.parts, readAt, 'gzip');
      assert.ok(gz.length < body.length / 3, `gzip ${gz.length} of ${body.length}`);
      assert.deepEqual(gunzipSync(gz), body);
      assert.equal(await webGunzip(gz), body.toString('utf8'));
    }
  });

  it('gzip: the head is deflated once per kept body; each request adds only readAt and the tail', () => {
    const page = keptPage('2026-11-23T04:00:00.000Z');
    const deflated = vi.spyOn(zlib, 'deflateRawSync');
    const a = compressParts(page.parts, '2026-11-23T04:00:00.000Z', 'gzip');
    const first = deflated.mock.calls.map(([input]) => (input as Buffer).length);
    deflated.mockClear();
    const b = compressParts(page.parts, '2026-11-23T04:00:09.000Z', 'gzip');
    const second = deflated.mock.calls.map(([input]) => (input as Buffer).length);
    deflated.mockRestore();
    assert.deepEqual(first, [page.parts.head.length, 24 + page.parts.tail!.length], 'the first request deflates the head, then readAt and the tail');
    assert.deepEqual(second, [24 + page.parts.tail!.length], 'a later one only readAt and the tail');
    // Same compressed head (after the 10-byte gzip header), a different end.
    const common = (() => {
      let n = 0;
      while (n < a.length && a[n] === b[n]) n += 1;
      return n;
    })();
    assert.ok(common > a.length - 80, `${common} common bytes of ${a.length}`);
    assert.notDeepEqual(a, b);
  });

  it('br: the whole body, made again per readAt (the kept head serves gzip only)', () => {
    const page = keptPage('2026-11-23T04:00:00.000Z');
    const readAt = '2026-11-23T04:00:05.000Z';
    assert.deepEqual(brotliDecompressSync(compressParts(page.parts, readAt, 'br')), bodyWith(page.parts, readAt));
  });

  it('a body without readAt is compressed once per encoding and kept', () => {
    const whole = partsOf<{ project: unknown }, never>({ project: { id: 'p', about: 'y'.repeat(5000) } });
    assert.ok(whole && whole.parts.tail === null);
    for (const encoding of ['gzip', 'br'] as const) {
      const once = compressParts(whole.parts, '', encoding);
      assert.equal(compressParts(whole.parts, '', encoding), once, 'the kept buffer itself');
      const plain = encoding === 'gzip' ? gunzipSync(once) : brotliDecompressSync(once);
      assert.deepEqual(plain, whole.parts.head);
    }
  });
});
