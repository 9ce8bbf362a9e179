import assert from 'node:assert/strict';
import { it } from 'vitest';
import { createOriginCheck } from '../../mcp/origin.ts';

const config = {
  HOST: '127.0.0.1',
  PULSEBOARD_MCP_ALLOWED_HOSTS: undefined,
  PULSEBOARD_MCP_ALLOWED_ORIGINS: undefined,
};

it('every Host and Origin is judged on its own, whatever was allowed before it', () => {
  const check = createOriginCheck(config);
  const verdicts = [
    { host: 'localhost:3000' },
    { host: 'evil.example.com' },
    { host: 'evil.example.com' },
    { host: 'localhost:3000', origin: 'http://evil.example.com' },
    { host: 'localhost:3000' },
    { host: undefined },
    { host: 'LOCALHOST:3000' },
    { host: '127.0.0.1:3000', origin: 'http://localhost:5173' },
    { host: 'localhost:3000', origin: 'null' },
  ].map((headers) => (check(headers) === null ? 'allowed' : 'refused'));
  assert.deepEqual(verdicts, [
    'allowed',
    'refused',
    'refused',
    'refused',
    'allowed',
    'refused',
    'allowed',
    'allowed',
    'refused',
  ]);
});
