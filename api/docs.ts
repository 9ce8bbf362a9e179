import type { OpenApiDocument } from './openapi.ts';

/**
 * The docs page: the OpenAPI document rendered once, on the server, into one self-contained HTML
 * page (inline style, no script, nothing fetched from elsewhere).
 */

const escapeHtml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

/** Backticked spans in descriptions become <code>; everything else is escaped text. */
const prose = (text: string) => escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');

type Json = Record<string, unknown>;

/** A one-line type summary of a parameter or property schema. */
function typeOf(schema: Json): string {
  if (typeof schema.$ref === 'string') {
    const id = schema.$ref.split('/').pop()!;
    return `<a href="#schema-${escapeHtml(id)}">${escapeHtml(id)}</a>`;
  }
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Json[]).map(typeOf).join(' or ');
  if (Array.isArray(schema.enum)) return (schema.enum as unknown[]).map((v) => `<code>${escapeHtml(JSON.stringify(v))}</code>`).join(' | ');
  if (schema.const !== undefined) return `<code>${escapeHtml(JSON.stringify(schema.const))}</code>`;
  const type = typeof schema.type === 'string' ? schema.type : 'any';
  const limits: string[] = [];
  if (typeof schema.format === 'string') limits.push(schema.format);
  if (schema.minimum !== undefined || schema.maximum !== undefined) limits.push(`${String(schema.minimum ?? '')}–${String(schema.maximum ?? '')}`);
  if (schema.maxLength !== undefined) limits.push(`max ${String(schema.maxLength)} chars`);
  if (schema.minLength !== undefined && schema.minLength !== 0) limits.push(`min ${String(schema.minLength)} chars`);
  if (type === 'array' && schema.items) return `array of ${typeOf(schema.items as Json)}${schema.maxItems !== undefined ? ` (max ${String(schema.maxItems)})` : ''}`;
  return escapeHtml(type) + (limits.length > 0 ? ` <span class="muted">(${escapeHtml(limits.join(', '))})</span>` : '');
}

function requestBody(op: Json): string {
  const schema = (((op.requestBody as Json | undefined)?.content as Json | undefined)?.['application/json'] as Json | undefined)?.schema;
  if (!schema) return '';
  return `<h4>Request body</h4><p>JSON, required.</p><pre>${escapeHtml(JSON.stringify(schema, null, 2))}</pre>`;
}

function operationHtml(base: string, method: string, path: string, op: Json): string {
  const parameters = (op.parameters as Json[] | undefined) ?? [];
  const responses = (op.responses as Record<string, Json>) ?? {};
  const params =
    parameters.length === 0
      ? '<p class="muted">No parameters.</p>'
      : `<table><thead><tr><th>Name</th><th>In</th><th>Type</th><th>Description</th></tr></thead><tbody>${parameters
          .map(
            (p) =>
              `<tr><td><code>${escapeHtml(String(p.name))}</code>${p.required ? ' <span class="req">required</span>' : ''}</td><td>${escapeHtml(String(p.in))}</td><td>${typeOf(p.schema as Json)}</td><td>${prose(String(p.description ?? ''))}</td></tr>`,
          )
          .join('')}</tbody></table>`;
  const rows = Object.entries(responses)
    .map(([status, r]) => {
      const content = r.content as Record<string, Json> | undefined;
      const schema = content?.['application/json']?.schema as Json | undefined;
      // A server-sent event stream: the type of each event's data.
      const events = content?.['text/event-stream']?.['x-event-data'] as Json | undefined;
      const body = schema ? typeOf(schema) : events ? `<code>text/event-stream</code>, each event's data a ${typeOf(events)}` : '';
      return `<tr><td class="status s${status.charAt(0)}">${escapeHtml(status)}</td><td>${prose(String(r.description ?? ''))}</td><td>${body}</td></tr>`;
    })
    .join('');
  const id = String(op.operationId);
  return `<section class="op" id="op-${escapeHtml(id)}">
<h3><span class="method">${escapeHtml(method.toUpperCase())}</span> <code>${escapeHtml(base + path)}</code></h3>
<p><strong>${prose(String(op.summary ?? ''))}</strong> <span class="muted">(${escapeHtml(id)})</span></p>
${op.description ? `<p>${prose(String(op.description))}</p>` : ''}
<h4>Parameters</h4>${params}
${requestBody(op)}
<h4>Responses</h4><table><thead><tr><th>Status</th><th>Meaning</th><th>Body</th></tr></thead><tbody>${rows}</tbody></table>
</section>`;
}

export function renderDocsPage(doc: OpenApiDocument): string {
  const base = doc.servers[0]?.url ?? '';
  const operations: string[] = [];
  const index: string[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      operations.push(operationHtml(base, method, path, op));
      index.push(`<li><a href="#op-${escapeHtml(String(op.operationId))}"><span class="method">${escapeHtml(method.toUpperCase())}</span> ${escapeHtml(base + path)}</a></li>`);
    }
  }
  const schemas = Object.entries(doc.components.schemas)
    .map(
      ([id, schema]) =>
        `<details id="schema-${escapeHtml(id)}"><summary><code>${escapeHtml(id)}</code></summary><pre>${escapeHtml(JSON.stringify(schema, null, 2))}</pre></details>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(doc.info.title)} ${escapeHtml(doc.info.version)}</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
code,pre{font-family:ui-monospace,monospace;font-size:.9em}pre{background:#f5f5f5;padding:.75rem;overflow:auto}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{border:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
.op{border-top:2px solid #333;margin-top:2rem}.method{font-weight:700;color:#0b5}.muted{color:#666}.req{color:#b40;font-size:.85em}
.status{font-weight:700}.s2{color:#0b5}.s4{color:#b40}.s5{color:#a00}details{margin:.25rem 0}
</style>
</head>
<body>
<h1>${escapeHtml(doc.info.title)} <small class="muted">${escapeHtml(doc.info.version)}</small></h1>
<p>${prose(doc.info.description)}</p>
<p>Machine-readable description: <a href="/v1/openapi.json">/v1/openapi.json</a> (OpenAPI ${escapeHtml(doc.openapi)}). Base path: <code>${escapeHtml(base)}</code>. Authentication: <code>Authorization: Bearer &lt;API key&gt;</code>.</p>
<h2>Operations</h2>
<ul>${index.join('')}</ul>
${operations.join('\n')}
<h2>Schemas</h2>
${schemas}
</body>
</html>
`;
}
