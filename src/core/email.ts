// Pragmatic address check (what HTML's input[type=email] accepts), bounded to RFC 5321's 254.
const EMAIL = /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+$/;
export const EMAIL_MAX = 254;
export const EMAIL_PATTERN = EMAIL.source;

export const isValidEmail = (value: string): boolean => value.length <= EMAIL_MAX && EMAIL.test(value);

/** Addresses are matched case-insensitively (portal, account log-in). */
export const normalizeEmail = (value: string): string => value.trim().toLowerCase();
