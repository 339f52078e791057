export { Tessera } from './client.js';
export type { TesseraOptions } from './client.js';
export { TesseraError } from './errors.js';
export type { TesseraErrorCode } from './errors.js';
export type * from './types.js';
