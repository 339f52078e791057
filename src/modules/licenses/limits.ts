/** Bounds of a license's fields (decisions.md), shared by the route schemas and the import's rules. */
export const DEVICE_IDENTIFIER_MAX = 96;
export const DEVICE_NAME_MAX = 64;
/**
 * Device identifiers and names are bounded after trimming (decisions.md), so the schemas let a
 * little surrounding whitespace through; this bounds the text as sent.
 */
export const DEVICE_FIELD_SENT_MAX = 256;
export const MAX_DEVICES_MAX = 100000;
