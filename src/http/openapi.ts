import type { TSchema } from 'typebox';
import { routeKey } from './api-access.ts';
import { PublicJwkBody, TokenConfigBody } from '../modules/license-tokens/schemas.ts';
import { LicensePageBody, PublicDeviceBody, PublicLicenseBody, ServerDeviceBody, ServerValidationBody } from '../modules/licenses/schemas.ts';
import { DeliveryBody, DeliveryDetailBody, DeliveryPageBody, WebhookEndpointBody } from '../modules/webhooks/schemas.ts';
import { ErrorBody } from './schema-helpers.ts';

/**
 * The OpenAPI document's named types (issue 36): generated clients get `Error`, `Device`,
 * `WebhookEndpoint`... rather than one anonymous type per use. The route schemas stay as they are
 * (the wire format is theirs, and every module keeps its own): wherever the document holds a copy
 * of one of these schemas, it becomes a `$ref` to it, here, in one place. License and Product are
 * components already (app.addSchema with their `$id`). Add a line to name another shared schema.
 */
export const NAMED_SCHEMAS: Readonly<Record<string, TSchema>> = {
  Error: ErrorBody,
  /** A device as the server API shows it (the public API's is PublicDevice). */
  Device: ServerDeviceBody,
  PublicDevice: PublicDeviceBody,
  PublicLicense: PublicLicenseBody,
  LicensePage: LicensePageBody,
  ServerValidation: ServerValidationBody,
  TokenConfig: TokenConfigBody,
  PublicJwk: PublicJwkBody,
  WebhookEndpoint: WebhookEndpointBody,
  WebhookDelivery: DeliveryBody,
  WebhookDeliveryDetail: DeliveryDetailBody,
  WebhookDeliveryPage: DeliveryPageBody,
};

type Json = Record<string, unknown>;
type Operation = { operationId?: string; security?: unknown[]; responses?: Record<string, { content?: Record<string, { schema?: Json }> }> };
type Document = { paths?: Record<string, Record<string, Operation>>; components?: { schemas?: Record<string, Json> } };

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A schema's identity: its JSON with keys sorted (the document and TypeBox may order them apart). */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isObject(value)) {
    return `{${Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * A route schema as @fastify/swagger writes it into the document (lib/spec/openapi/utils.js,
 * convertJsonSchemaToOpenapi3), so that a named schema is recognised wherever the document holds it:
 * no `$id`, a bare `$ref: "License"` points into components, `const` is a one-value `enum`, and a
 * TypeBox Record's patternProperties is `additionalProperties`.
 */
function asDocumentSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(asDocumentSchema);
  if (!isObject(node)) return node;
  if (typeof node.$ref === 'string') return { $ref: node.$ref.startsWith('#') ? node.$ref : `#/components/schemas/${node.$ref}` };
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$id' || k === '$schema' || k === 'definitions') continue;
    if (k === 'const') out.enum = [v];
    else if (k === 'patternProperties' && isObject(v)) out.additionalProperties = asDocumentSchema(Object.values(v)[0]);
    else if (k === 'properties' && isObject(v)) out.properties = Object.fromEntries(Object.entries(v).map(([name, prop]) => [name, asDocumentSchema(prop)]));
    else out[k] = asDocumentSchema(v);
  }
  return out;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const pascal = (operationId: string) => operationId.replace(/(^|-)([a-z0-9])/g, (_m, _d, c: string) => c.toUpperCase());
/** Only objects and lists are worth a name: a string or an empty answer stays inline. */
const nameable = (s: Json) => s.$ref === undefined && (s.type === 'object' || s.type === 'array' || isObject(s.properties));

/** Replaces every copy of a named schema under `node` (not `node` itself) with its `$ref`, largest first. */
function refer(node: unknown, names: Map<string, string>): unknown {
  if (Array.isArray(node)) return node.map((item) => refer(item, names));
  if (!isObject(node)) return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    const name = isObject(v) ? names.get(canonical(v)) : undefined;
    out[k] = name ? ref(name) : refer(v, names);
  }
  return out;
}

/** `/api/v1/licenses/{key}` as Fastify declares it: `/api/v1/licenses/:key`. */
const fastifyPath = (path: string) => path.replace(/\{([^}]+)\}/g, ':$1');

/**
 * Names the document's schemas and states each operation's security:
 * - every copy of a NAMED_SCHEMAS schema (and of an existing component) becomes a `$ref`;
 * - each operation's JSON 200 answer that is still inline becomes a component named after its
 *   operation (`GetWebhookEndpointAnswer`), shared by every operation answering the same shape;
 * - a route behind an API key (`serverApiRoutes`, as auth.ts registered them) carries the bearer
 *   scheme, every other one `security: []` (the public API: no credentials).
 */
export function nameDocumentSchemas<T extends object>(given: T, serverApiRoutes: readonly string[]): T {
  const document = given as Document;
  const components: Record<string, Json> = { ...(document.components?.schemas ?? {}) };
  for (const [name, schema] of Object.entries(NAMED_SCHEMAS)) components[name] ??= asDocumentSchema(JSON.parse(JSON.stringify(schema))) as Json;
  const names = new Map<string, string>(Object.entries(components).map(([name, schema]) => [canonical(schema), name]));
  const server = new Set(serverApiRoutes);
  for (const [path, methods] of Object.entries(document.paths ?? {})) {
    for (const [method, op] of Object.entries(methods)) {
      op.security = server.has(routeKey(method.toUpperCase(), fastifyPath(path))) ? [{ apiKey: [] }] : [];
      // An answer of its own shape is named after the first operation answering it.
      const schema = op.responses?.['200']?.content?.['application/json']?.schema;
      if (!schema || !nameable(schema) || !op.operationId || names.has(canonical(schema))) continue;
      const name = `${pascal(op.operationId)}Answer`;
      names.set(canonical(schema), name);
      components[name] = schema;
    }
  }
  // Then every copy of a named shape, in the paths and inside other components, becomes its $ref.
  const schemas = Object.fromEntries(
    Object.entries(components).map(([name, schema]) => [name, refer(schema, new Map([...names].filter(([, n]) => n !== name))) as Json]),
  );
  const paths = refer(document.paths ?? {}, names) as NonNullable<Document['paths']>;
  return { ...document, paths, components: { ...document.components, schemas } } as T;
}
