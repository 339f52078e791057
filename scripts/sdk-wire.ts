/**
 * The SDKs' wire types, generated from the server's own schemas: the OpenAPI document the route
 * schemas produce, and the error-code list of src/core/errors.ts. Both SDK workspaces get the same
 * file (`src/wire.generated.ts`); test/sdk/wire-types.drift.test.ts fails when a committed copy
 * differs from what this generates. Run `npm run generate:sdk-wire` after changing a wire schema.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { ERROR_CODES } from '../src/core/errors.ts';
import { createServices } from '../src/services.ts';
import { openStore } from '../src/storage/index.ts';

type Schema = {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, Schema>;
  /** A map with free keys (TypeBox's Record, as the OpenAPI document shows it). */
  additionalProperties?: Schema | boolean;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  description?: string;
};

export const SDK_WIRE_FILES = ['packages/client/src/wire.generated.ts', 'packages/node/src/wire.generated.ts'];

const refName = (ref: string): string => `Wire${ref.split('/').pop()}`;
const componentName = (ref: string): string => ref.split('/').pop()!;

/**
 * The components the SDKs name (WireLicense, WireProduct). The document names more (src/http/openapi.ts);
 * those are written out where they are used, so the SDKs' types stay what they were.
 */
const NAMED = new Set(['License', 'Product']);
let components: Record<string, Schema> = {};

/** A `$ref` to a component the SDKs do not name: the component itself. */
const deref = (schema: Schema): Schema => (schema.$ref && !NAMED.has(componentName(schema.$ref)) ? deref(components[componentName(schema.$ref)]!) : schema);

/** JSON Schema (as the route schemas emit it) to a TypeScript type expression. */
function emit(schema: Schema, indent = ''): string {
  if (schema.$ref && !NAMED.has(componentName(schema.$ref))) return emit(deref(schema), indent);
  if (schema.$ref) return refName(schema.$ref);
  if (schema.anyOf) return schema.anyOf.map((s) => emit(s, indent)).join(' | ');
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];
  const nullable = types.includes('null');
  let base: string;
  if (schema.enum) base = schema.enum.filter((v) => v !== null).map((v) => JSON.stringify(v)).join(' | ');
  else if (typeof schema.additionalProperties === 'object') base = `Record<string, ${emit(schema.additionalProperties, indent)}>`;
  else if (types.includes('object') || schema.properties) {
    const required = new Set(schema.required ?? []);
    const fields = Object.entries(schema.properties ?? {}).map(([name, prop]) => {
      const doc = prop.description ? `${indent}  /** ${prop.description} */\n` : '';
      return `${doc}${indent}  ${name}${required.has(name) ? '' : '?'}: ${emit(prop, `${indent}  `)};`;
    });
    base = fields.length ? `{\n${fields.join('\n')}\n${indent}}` : 'Record<string, never>';
  } else if (types.includes('array')) base = `Array<${emit(schema.items ?? {}, indent)}>`;
  else if (types.includes('integer') || types.includes('number')) base = 'number';
  else if (types.includes('string')) base = 'string';
  else if (types.includes('boolean')) base = 'boolean';
  else base = 'unknown';
  return nullable ? `${base} | null` : base;
}

const nonNull = (schema: Schema): Schema => ({ ...schema, type: Array.isArray(schema.type) ? schema.type.filter((t) => t !== 'null') : schema.type });

/** Generates the file's text from a running app's OpenAPI document. */
export async function generateSdkWire(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-sdk-wire-'));
  const config = loadConfig({ DATA_DIR: dir, RATE_LIMIT: 'off' });
  const store = await openStore({ dataDir: dir });
  const app = await buildApp({ config, services: createServices(store, config.secretKey), logger: false });
  try {
    await app.ready();
    const doc = app.swagger() as unknown as { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: Schema }> }> }>>; components: { schemas: Record<string, Schema> } };
    components = doc.components.schemas;
    const ok = (path: string, method: string): Schema => deref(doc.paths[`/api/v1${path}`]![method]!.responses['200']!.content!['application/json']!.schema);
    const publicValidation = ok('/public/licenses/validate', 'post');
    const serverValidation = ok('/licenses/validate', 'post');
    const types: [string, Schema][] = [
      ...[...NAMED].map((name) => [`Wire${name}`, components[name]!] as [string, Schema]),
      ['WireDevice', deref(components.License!.properties!.activeDevices!.items!)],
      ['WirePublicLicense', nonNull(deref(publicValidation.properties!.license!))],
      ['WireLicenseStatus', serverValidation.properties!.status!],
      ['WireValidationReason', publicValidation.properties!.reason!],
      ['WirePublicActivation', ok('/public/licenses/activate', 'post')],
      ['WirePublicValidation', publicValidation],
      ['WireTokenRefresh', ok('/public/licenses/token', 'post')],
      ['WireServerValidation', serverValidation],
      ['WireLicensePage', ok('/products/{productId}/licenses', 'get')],
      ['WireLicenseTokenConfig', ok('/products/{productId}/license-token', 'get')],
      ['WirePortalSession', ok('/portal/sessions/private', 'post')],
    ];
    const lines = [
      '// Generated by scripts/sdk-wire.ts from the server\'s route schemas and error codes: do not edit.',
      '// Regenerate with `npm run generate:sdk-wire`; test/sdk/wire-types.drift.test.ts fails when this copy is stale.',
      '',
      '/** Every error code the service answers with. */',
      `export const SERVER_ERROR_CODES = ${JSON.stringify(ERROR_CODES)} as const;`,
      'export type ServerErrorCode = (typeof SERVER_ERROR_CODES)[number];',
      '',
      ...types.map(([name, schema]) => `export type ${name} = ${emit(schema)};\n`),
    ];
    return lines.join('\n');
  } finally {
    await app.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const text = await generateSdkWire();
  for (const file of SDK_WIRE_FILES) writeFileSync(file, text);
  console.log(`wrote ${SDK_WIRE_FILES.join(', ')}`);
}
