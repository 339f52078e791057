import { createConfig, lintFromString } from '@redocly/openapi-core';
import { expect, it } from 'vitest';
import { canonical } from '../../src/http/openapi.ts';
import { call, useTestApp } from '../support/app.ts';

/**
 * A lint of the OpenAPI document (issue 36): Redocly's recommended rules, and this service's own:
 * every operation named, tagged, summarised and answered; public operations say they take no
 * credentials and server ones the bearer key; named types are used wherever their shape appears.
 */
const ctx = useTestApp('sqlite');

type Schema = Record<string, unknown>;
type Operation = { operationId?: string; summary?: string; tags?: string[]; security?: Record<string, string[]>[]; responses?: Record<string, { content?: Record<string, { schema?: Schema }> }> };
type Doc = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema>; securitySchemes: Record<string, unknown> } };

const document = async () => (await call(ctx, { method: 'GET', url: '/api/v1/openapi.json' })).body as Doc;
const operations = (doc: Doc) => Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ at: `${method.toUpperCase()} ${path}`, path, op })));

/** Every subschema (not the roots given) with where it is. */
function* walk(node: unknown, at: string): Generator<{ at: string; node: Schema }> {
  if (Array.isArray(node)) for (const [i, item] of node.entries()) yield* walk(item, `${at}/${i}`);
  else if (typeof node === 'object' && node !== null) {
    for (const [k, v] of Object.entries(node)) {
      if (typeof v === 'object' && v !== null && !Array.isArray(v)) yield { at: `${at}/${k}`, node: v as Schema };
      yield* walk(v, `${at}/${k}`);
    }
  }
}

it("passes Redocly's recommended rules with no problem at all", async () => {
  const config = await createConfig({ extends: ['recommended'], rules: { 'info-license': 'off' } });
  const problems = await lintFromString({ source: JSON.stringify(await document()), absoluteRef: 'openapi.json', config });
  expect(problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
});

it('names, tags, summarises and answers every operation', async () => {
  const missing = operations(await document()).flatMap(({ at, op }) => [
    ...(op.operationId ? [] : [`${at}: operationId`]),
    ...(op.summary ? [] : [`${at}: summary`]),
    ...(op.tags?.length ? [] : [`${at}: tags`]),
    ...(Object.keys(op.responses ?? {}).some((s) => /^2/.test(s)) ? [] : [`${at}: a 2xx response`]),
  ]);
  expect(missing).toEqual([]);
});

it('public operations take no credentials (security: []) and every server-API operation the bearer key', async () => {
  const doc = await document();
  expect(Object.keys(doc.components.securitySchemes)).toEqual(['apiKey']);
  const server = new Set(ctx.app.serverApiRoutes);
  const wrong: string[] = [];
  const open: string[] = [];
  for (const { at, op } of operations(doc)) {
    const key = at.replace(/\{([^}]+)\}/g, ':$1');
    const expected = server.has(key) ? [{ apiKey: [] }] : [];
    if (JSON.stringify(op.security) !== JSON.stringify(expected)) wrong.push(`${at}: ${JSON.stringify(op.security)}`);
    if (expected.length === 0) open.push(at);
  }
  expect(wrong).toEqual([]);
  // The public API used by apps, and the providers' signed callbacks: nothing else is open.
  for (const at of open) expect(at).toMatch(/^[A-Z]+ \/api\/v1\/(public\/|payments\/[a-z]+\/webhook\/)/);
  expect(open).toEqual(expect.arrayContaining(['POST /api/v1/public/licenses/activate', 'POST /api/v1/public/licenses/validate', 'POST /api/v1/public/licenses/token', 'POST /api/v1/public/licenses/heartbeat', 'DELETE /api/v1/public/licenses/device', 'POST /api/v1/public/trials']));
});

it('has named types: License, Product, Device, Error and each JSON answer, every $ref resolving, no inline copy of a named one', async () => {
  const doc = await document();
  const { schemas } = doc.components;
  expect(Object.keys(schemas)).toEqual(expect.arrayContaining(['License', 'Product', 'Device', 'Error', 'WebhookEndpoint', 'WebhookDelivery']));
  const named = new Map(Object.entries(schemas).map(([name, schema]) => [canonical(schema), name]));
  const dangling: string[] = [];
  const copies: string[] = [];
  for (const { at, node } of walk(doc, '#')) {
    if (typeof node.$ref === 'string' && !(node.$ref.startsWith('#/components/schemas/') && node.$ref.split('/').pop()! in schemas)) dangling.push(`${at}: ${node.$ref}`);
    const name = named.get(canonical(node));
    // A component's own root is the one place its shape is written out.
    if (name && at !== `#/components/schemas/${name}`) copies.push(`${at}: ${name}`);
  }
  expect(dangling).toEqual([]);
  expect(copies).toEqual([]);
  const inline = operations(doc).flatMap(({ at, op }) => {
    const schema = op.responses?.['200']?.content?.['application/json']?.schema;
    return schema && (schema.type === 'object' || schema.type === 'array') ? [at] : [];
  });
  expect(inline, 'JSON answers without a name').toEqual([]);
  // Errors are one type everywhere.
  for (const { at, op } of operations(doc)) {
    for (const [status, answer] of Object.entries(op.responses ?? {})) {
      if (/^[45]/.test(status)) expect(answer.content?.['application/json']?.schema, `${at} ${status}`).toEqual({ $ref: '#/components/schemas/Error' });
    }
  }
});
