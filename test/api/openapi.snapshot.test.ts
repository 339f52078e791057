import { readFileSync, writeFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { call, useTestApp } from '../support/app.ts';

const SNAPSHOT = new URL('./__snapshots__/openapi.json', import.meta.url);

// The OpenAPI document is generated from the route schemas; a refactor must not change its paths
// or the wire format by accident. A deliberate change: UPDATE_OPENAPI_SNAPSHOT=1 npx vitest run test/api/openapi.snapshot.test.ts
const ctx = useTestApp('sqlite');

it('the OpenAPI document is the committed one', async () => {
  const res = await call(ctx, { method: 'GET', url: '/api/v1/openapi.json' });
  expect(res.status).toBe(200);
  const current = `${JSON.stringify(res.body, null, 1)}\n`;
  if (process.env.UPDATE_OPENAPI_SNAPSHOT) writeFileSync(SNAPSHOT, current);
  expect(JSON.parse(current), 'the OpenAPI document changed: if on purpose, UPDATE_OPENAPI_SNAPSHOT=1 npx vitest run test/api/openapi.snapshot.test.ts').toEqual(
    JSON.parse(readFileSync(SNAPSHOT, 'utf8')),
  );
});
