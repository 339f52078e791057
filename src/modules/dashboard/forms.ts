import type { Static, TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { AppError } from '../../core/errors.ts';

/** A form's fields as the urlencoded parser gives them (the last of repeated names wins). */
export type FormBody = Record<string, string | undefined>;

const WHOLE = /^-?\d{1,9}$/;

/** Form text to the API's types: '' → null (or absent), a whole number → number, a checkbox → boolean. */
export const text = (v: string | undefined) => (v === undefined ? undefined : v.trim());
export const nullable = (v: string | undefined) => (v === undefined || v.trim() === '' ? null : v.trim());
export const optional = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v.trim());
export const whole = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : WHOLE.test(v.trim()) ? Number(v.trim()) : v.trim());
export const checked = (v: string | undefined) => v === 'on';

function humanize(error: { keyword: string; params: Record<string, unknown>; message: string }): string {
  const p = error.params;
  switch (error.keyword) {
    case 'minLength':
      return p.limit === 1 ? 'is required' : `must be at least ${String(p.limit)} characters`;
    case 'maxLength':
      return `must be at most ${String(p.limit)} characters`;
    case 'pattern':
      return String(p.pattern).includes('@') ? 'must be a valid e-mail address, like name@example.com' : 'is not in the expected format';
    case 'minimum':
      return `must be at least ${String(p.limit)}`;
    case 'maximum':
      return `must be at most ${String(p.limit)}`;
    case 'minItems':
      return p.limit === 1 ? 'needs at least one choice' : `needs at least ${String(p.limit)} choices`;
    case 'type':
      return 'must be a whole number';
    case 'required':
      return 'is required';
    default:
      return 'is not valid';
  }
}

/**
 * Checks a form against the server API's own schema for the same operation (one rule, not a
 * second copy): a failure is the same `invalid_request` error the API gives, with one issue per field.
 */
export function parseWith<T extends TSchema>(schema: T, body: Record<string, unknown>): Static<T> {
  const clean = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
  if (Value.Check(schema, clean)) return clean as Static<T>;
  const issues = new Map<string, string>();
  for (const e of Value.Errors(schema, clean)) {
    // A nested object's field keeps its place ("floating.leaseSeconds"); an array's item is its array's.
    const segments = e.instancePath.replace(/^\//, '').split('/');
    const end = segments.findIndex((s) => /^[0-9]+$/.test(s));
    const path = (end < 0 ? segments : segments.slice(0, end)).join('.');
    if (e.keyword === 'boolean' || e.keyword === 'additionalProperties' || e.keyword === 'anyOf') continue;
    if (path && !issues.has(path)) issues.set(path, humanize(e as never));
  }
  if (issues.size === 0) issues.set('_form', 'The form is not valid.');
  throw new AppError('invalid_request', 'The request is invalid.', [...issues].map(([path, message]) => ({ path, message })));
}

/**
 * Field messages of an `invalid_request` (from a schema or a service rule), every field's at once;
 * undefined for any other error. A field's message is the rule's words ("must be at least 1"): the
 * form puts its own label before them (views.fieldMessage), so the reader sees the words on the screen.
 */
export function fieldErrors(error: unknown, rename: Record<string, string> = {}): Record<string, string> | undefined {
  if (!(error instanceof AppError)) return undefined;
  if (error.code !== 'invalid_request' && error.code !== 'product_has_licenses' && error.code !== 'license_tokens_disabled') return undefined;
  const errors: Record<string, string> = {};
  for (const issue of error.issues ?? []) {
    const full = issue.path.replace(/^(body|query)\./, '');
    const path = full.split('.')[0]!;
    errors[rename[full] ?? rename[path] ?? path] ??= issue.message;
  }
  if (Object.keys(errors).length === 0) errors._form = error.message;
  return errors;
}

/** Issues of two checks of one form together, so every wrong field is shown at once (the first error's own issues first). */
export function mergeIssues(first: unknown, second: unknown): unknown {
  if (!(first instanceof AppError) || !(second instanceof AppError) || first.code !== 'invalid_request' || second.code !== 'invalid_request') return first;
  const paths = new Set((first.issues ?? []).map((i) => i.path));
  return new AppError('invalid_request', first.message, [...(first.issues ?? []), ...(second.issues ?? []).filter((i) => !paths.has(i.path))]);
}
