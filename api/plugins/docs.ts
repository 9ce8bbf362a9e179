import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/**
 * The interactive reference at /docs: Swagger UI, served from the swagger-ui-dist package (a
 * runtime dependency, so the page works offline and nothing is fetched from elsewhere), pointed at
 * /v1/openapi.json. The bearer key is entered once under "Authorize" and sent with every "Try it
 * out" request; it stays in this browser's local storage (persistAuthorization), never on the server.
 */

const SWAGGER_UI_DIR = dirname(fileURLToPath(import.meta.resolve('swagger-ui-dist/package.json')));

/** The only assets the page loads, all same-origin under /docs/. */
const ASSETS: Record<string, { file: string | null; type: string }> = {
  'swagger-ui.css': { file: 'swagger-ui.css', type: 'text/css; charset=utf-8' },
  'swagger-ui-bundle.js': { file: 'swagger-ui-bundle.js', type: 'text/javascript; charset=utf-8' },
  'favicon-32x32.png': { file: 'favicon-32x32.png', type: 'image/png' },
  'init.js': { file: null, type: 'text/javascript; charset=utf-8' },
};

/** Swagger UI's settings: no topbar (it would let the page load other documents), no validator badge (an outside request). */
const INIT_SCRIPT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/v1/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    validatorUrl: null,
    persistAuthorization: true,
    tryItOutEnabled: true,
    displayRequestDuration: true,
    defaultModelsExpandDepth: 0,
    defaultModelExpandDepth: 2,
    docExpansion: 'list',
    filter: true,
  });
});
`;

export const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pulseboard read API</title>
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<noscript><p>This page needs JavaScript. The interface description is <a href="/v1/openapi.json">/v1/openapi.json</a> (OpenAPI 3.1).</p></noscript>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

/** Same-origin scripts, styles and requests only; Swagger UI sets inline styles and shows data: images. */
export const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * The docs page and its assets. No page under /docs may be framed: `frame-ancestors 'none'` and
 * X-Frame-Options on every route of this plugin, whatever CSP a route sends.
 */
export const docsPlugin = fp(async (app) => {
  const cache = new Map<string, Buffer>();
  const body = (name: string): Buffer => {
    let bytes = cache.get(name);
    if (!bytes) {
      const file = ASSETS[name]!.file;
      bytes = file === null ? Buffer.from(INIT_SCRIPT) : readFileSync(join(SWAGGER_UI_DIR, file));
      cache.set(name, bytes);
    }
    return bytes;
  };
  app.get('/docs', { onSend: framedNowhere }, async (_request, reply) =>
    reply
      .header('cache-control', 'public, max-age=300')
      .header('content-security-policy', DOCS_CSP)
      .type('text/html; charset=utf-8')
      .send(DOCS_PAGE),
  );
  for (const [name, asset] of Object.entries(ASSETS)) {
    app.get(`/docs/${name}`, { onSend: framedNowhere }, async (_request, reply) =>
      reply.header('cache-control', 'public, max-age=3600').type(asset.type).send(body(name)),
    );
  }
});

function framedNowhere(
  _request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
  done: (error: null, payload: unknown) => void,
): void {
  const policy = reply.getHeader('content-security-policy') as string | undefined;
  reply.header('content-security-policy', withFrameAncestors(policy));
  reply.header('x-frame-options', 'DENY');
  done(null, payload);
}

/** `frame-ancestors 'none'` added to whatever policy a docs route sends (or as its policy). */
function withFrameAncestors(policy: string | undefined): string {
  if (!policy) return "frame-ancestors 'none'";
  return /frame-ancestors/i.test(policy) ? policy : `${policy}; frame-ancestors 'none'`;
}
