export { Tessera } from './client.ts';
export type { TesseraOptions } from './client.ts';
export { TesseraError } from './errors.ts';
export type { TesseraErrorCode } from './errors.ts';
export type * from './types.ts';
