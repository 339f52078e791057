import { type Static, type TSchema, Type } from 'typebox';
import { EMAIL_MAX, EMAIL_PATTERN } from '../core/email.ts';
import { invalidRequest } from '../core/errors.ts';

/**
 * `{type: [T, "null"]}` rather than anyOf: ajv validates it the same and fast-json-stringify
 * serializes it without trying each branch.
 */
export function Nullable<T extends TSchema>(schema: T) {
  const { type, ...rest } = schema as unknown as { type: string; enum?: unknown[] };
  // An enum lists null too: JSON Schema checks `enum` as well as `type`, and so do code generators.
  if (rest.enum) rest.enum = [...rest.enum, null];
  return Type.Unsafe<Static<T> | null>({ ...rest, type: [type, 'null'] });
}

/** A string from a fixed list: a plain `enum` in the document (what code generators turn into a union). */
export const StringEnum = <T extends string>(values: readonly T[], options: { description?: string } = {}) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...options });

export const Email = Type.String({ maxLength: EMAIL_MAX, pattern: EMAIL_PATTERN, description: 'An e-mail address.' });
export const Timestamp = Type.String({ description: 'ISO 8601 UTC timestamp with milliseconds.', examples: ['2026-05-19T18:39:33.000Z'] });

export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      // Not an enum on purpose: the list grows, and a client generated today must accept tomorrow's codes.
      code: Type.String({ description: 'A stable error code (docs/api.md lists them); treat an unknown one by its HTTP status.' }),
      message: Type.String(),
      issues: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
      status: Type.Optional(Nullable(Type.String({ description: "trial_already_used: the status of the device's trial license (null once deleted)." }))),
    }),
  },
  { description: 'Every error: a stable code and a human-readable message.' },
);

/** Error responses a route documents besides its 200. */
export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [s, ErrorBody])) as Record<number, typeof ErrorBody>;

export const LicenseKeyHeader = Type.Object({
  'license-key': Type.String({ minLength: 1, maxLength: 64, description: 'The license key, e.g. K7QPM-2XHDA-9RTWC-B4NZE-6FJUV.' }),
});

/** Documents an empty 200 (DELETE endpoints answer with content-length 0). */
export const EmptyResponse = Type.Unsafe<void>({ description: 'Empty body (content-length: 0).' });

/** A list's `?limit=` (digits, checked by its schema) as a number from 1 to `max`, or undefined when absent. */
export function pageLimit(raw: string | undefined, max: number): number | undefined {
  if (raw === undefined) return undefined;
  const limit = Number(raw);
  if (limit < 1 || limit > max) throw invalidRequest('query.limit', `must be 1 to ${max}`);
  return limit;
}
