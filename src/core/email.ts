// Pragmatic address check (what HTML's input[type=email] accepts), bounded to RFC 5321's 254.
// ASCII only: the service does not speak SMTPUTF8, and an address is checked as given, before any
// folding, so no Unicode character can fold into an ASCII one (U+212A KELVIN SIGN lowercases to "k").
const EMAIL = /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+$/;
export const EMAIL_MAX = 254;
export const EMAIL_PATTERN = EMAIL.source;

export const isValidEmail = (value: string): boolean => value.length <= EMAIL_MAX && EMAIL.test(value);

/**
 * The one normalization of addresses, used for lookups and for delivery alike: trimmed, ASCII
 * letters lowercased, nothing else changed (String.prototype.toLowerCase would fold some
 * non-ASCII letters into ASCII ones).
 */
export const normalizeEmail = (value: string): string => value.trim().replace(/[A-Z]+/g, (s) => s.toLowerCase());

/** The normalized address, or undefined when the input is not a valid (ASCII) address. */
export function canonicalEmail(raw: string): string | undefined {
  const email = normalizeEmail(raw);
  return isValidEmail(email) ? email : undefined;
}
