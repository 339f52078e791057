import { ENTITLEMENT_PATTERN, ENTITLEMENTS_MAX } from '../../core/entitlements.ts';
import { AppError, type Issue } from '../../core/errors.ts';
import { mergeIssues } from './forms.ts';

/**
 * The licensing model's fields in forms (decisions.md, "Licensing model"): entitlement codes typed
 * as one line, checked with the rule's own pattern and limit, so a wrong code is named in the
 * message rather than reported as "not in the expected format".
 */

const CODE = new RegExp(ENTITLEMENT_PATTERN);

/** Codes as typed: separated by spaces, commas or new lines. */
export const codesOf = (raw: string | undefined): string[] => (raw ?? '').split(/[\s,]+/).filter((c) => c !== '');

/** What is wrong with a set of codes, in words that follow the field's label; undefined when nothing is. */
export function codesProblem(codes: readonly string[]): string | undefined {
  const bad = codes.filter((c) => !CODE.test(c));
  if (bad.length > 0) {
    const shown = bad.slice(0, 3).map((c) => `"${c.length > 40 ? `${c.slice(0, 40)}…` : c}"`).join(', ');
    return `must be codes of lower-case letters, digits and _ . - (1 to 64 characters, starting with a letter or digit), not ${shown}${bad.length > 3 ? ` and ${bad.length - 3} more` : ''}`;
  }
  if (new Set(codes).size > ENTITLEMENTS_MAX) return `must hold at most ${ENTITLEMENTS_MAX} codes`;
  return undefined;
}

/**
 * `parse()` (a schema check) with the form's own issues first: every problem is shown at once, and a
 * field the form checked itself keeps the form's words rather than the schema's.
 */
export function withIssues<R>(issues: Issue[], parse: () => R): R {
  let failure: unknown;
  try {
    const parsed = parse();
    if (issues.length === 0) return parsed;
  } catch (error) {
    if (issues.length === 0) throw error;
    failure = error;
  }
  const own = new AppError('invalid_request', 'The request is invalid.', issues);
  throw failure === undefined ? own : mergeIssues(own, failure);
}

/** An object without its undefined fields (a form field left empty keeps the stored value). */
export const defined = <T extends Record<string, unknown>>(o: T): Partial<T> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
