/** Bounds of a license's fields (decisions.md), shared by the route schemas and the import's rules. */
export const DEVICE_IDENTIFIER_MAX = 96;
export const DEVICE_NAME_MAX = 64;
export const MAX_DEVICES_MAX = 100000;
