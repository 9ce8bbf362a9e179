import { AssertionError } from 'node:assert';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

/**
 * Validates response bodies against an OpenAPI 3.1 document with ajv (JSON Schema 2020-12 and
 * ajv-formats): an independent check of what the service serves, not our zod schemas re-run.
 *
 *   const doc = (await h.get('/v1/openapi.json')).json();
 *   assertResponse(doc, 'GET', '/v1/calltracker/calls?limit=5', res.status, res.json());
 */

type Json = Record<string, any>;
export type Validation = { ok: true } | { ok: false; message: string };

// ajv-formats is CommonJS; under Node's ESM loader its default export is the plugin itself.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv2020) => void;

const DOC_ID = 'urn:pulseboard:openapi';
const compiled = new WeakMap<object, { ajv: Ajv2020; validators: Map<string, ValidateFunction> }>();

function ajvFor(doc: Json) {
  let entry = compiled.get(doc);
  if (!entry) {
    // strict: false because the document holds OpenAPI keywords (paths, components …) around its schemas.
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
    addFormats(ajv);
    ajv.addSchema({ ...doc, $id: DOC_ID });
    entry = { ajv, validators: new Map() };
    compiled.set(doc, entry);
  }
  return entry;
}

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** The document's path template for a concrete request path (`/v1/calltracker/calls/abc?x=1` → `/calltracker/calls/{id}`). */
export function matchPath(doc: Json, requestPath: string): string | null {
  const base = (doc.servers?.[0]?.url as string | undefined) ?? '';
  let path = requestPath.split('?')[0]!;
  if (base && base !== '/' && path.startsWith(base)) path = path.slice(base.length) || '/';
  const segments = path
    .split('/')
    .filter(Boolean)
    .map((s) => decodeURIComponent(s));
  let best: { template: string; literal: number } | null = null;
  for (const template of Object.keys(doc.paths ?? {})) {
    const parts = template.split('/').filter(Boolean);
    if (parts.length !== segments.length) continue;
    let literal = 0;
    const fits = parts.every((part, i) => {
      if (/^\{[^}]+\}$/.test(part)) return true;
      literal += 1;
      return part === segments[i];
    });
    // The most literal template wins (`/pulse/x` over `/pulse/{beat}` if both existed).
    if (fits && (!best || literal > best.literal)) best = { template, literal };
  }
  return best?.template ?? null;
}

/** Validates one response body against the schema the document gives for that operation and status. */
export function validateResponse(
  doc: Json,
  method: string,
  requestPath: string,
  status: number,
  body: unknown,
): Validation {
  const template = matchPath(doc, requestPath);
  if (!template) return { ok: false, message: `no path in the document matches ${requestPath}` };
  const verb = method.toLowerCase();
  const operation = doc.paths[template]?.[verb];
  if (!operation) return { ok: false, message: `${method.toUpperCase()} ${template} is not in the document` };
  const response = operation.responses?.[String(status)];
  if (!response) {
    return {
      ok: false,
      message: `status ${status} is not documented for ${method.toUpperCase()} ${template} (documented: ${Object.keys(operation.responses ?? {}).join(', ')})`,
    };
  }
  if (!response.content?.['application/json']?.schema) {
    return { ok: false, message: `${method.toUpperCase()} ${template} ${status} documents no application/json body` };
  }
  const { ajv, validators } = ajvFor(doc);
  const ref = `${DOC_ID}#/${pointer('paths', template, verb, 'responses', String(status), 'content', 'application/json', 'schema')}`;
  let validate = validators.get(ref);
  if (!validate) {
    validate = ajv.compile({ $ref: ref });
    validators.set(ref, validate);
  }
  if (validate(body)) return { ok: true };
  const details = (validate.errors ?? [])
    .slice(0, 8)
    .map((e) => `${e.instancePath || '(body)'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
  return {
    ok: false,
    message: `${method.toUpperCase()} ${requestPath} ${status} does not match the document:\n  ${details.join('\n  ')}`,
  };
}

/** validateResponse that fails the test with the mismatch. */
export function assertResponse(doc: Json, method: string, requestPath: string, status: number, body: unknown): void {
  const outcome = validateResponse(doc, method, requestPath, status, body);
  if (!outcome.ok) throw new AssertionError({ message: outcome.message });
}

/** One response as a test reads it: the harness's `get` answers it, and the checked client below. */
export type CheckedResponse = { status: number; headers: Record<string, unknown>; body: string; json: () => any };

/** What the checked client needs of a harness: its GET (structural, so this module does not import the harness). */
export type Getter = { get(url: string, key?: string): Promise<CheckedResponse> };

/**
 * A GET client over a harness that checks every response (success and error) against the served
 * document before handing it back, so no response of an end-to-end test goes unvalidated.
 */
export async function createCheckedClient(h: Getter) {
  const served = await h.get('/v1/openapi.json');
  if (served.status !== 200) throw new Error(`GET /v1/openapi.json answered ${served.status}`);
  const doc = served.json() as Json;
  let checked = 0;
  return {
    doc,
    /** How many responses were validated so far. */
    get checked() {
      return checked;
    },
    async get(url: string, key?: string): Promise<CheckedResponse> {
      const res = await h.get(url, key);
      const body = JSON.parse(res.body) as unknown;
      assertResponse(doc, 'GET', url, res.status, body);
      checked += 1;
      return { status: res.status, headers: res.headers, body: res.body, json: () => body };
    },
  };
}
