export { Tessera } from './client.js';
export type { TesseraOptions } from './client.js';
export { TesseraError } from './errors.js';
export type { TesseraErrorCode } from './errors.js';
export type * from './types.js';
export { SERVER_ERROR_CODES } from './wire.generated.js';
export type { ServerErrorCode } from './wire.generated.js';
export { verifyWebhook, WebhookVerificationError } from './webhooks.js';
export type { VerifyWebhookOptions, WebhookEvent } from './webhooks.js';
