import { AppError } from '../../core/errors.ts';
import type { Job } from '../outbox/outbox.ts';
import type { JobConsumer } from '../outbox/worker.ts';
import { retryDelay } from '../outbox/worker.ts';

/** The outbox job kind that deletes a replaced notification endpoint at its provider. */
export const DELETE_ENDPOINT_JOB = 'payments.delete-endpoint';

/**
 * What the job needs: the endpoint, and the key that made it, still sealed (as it was in the
 * connection's row, under that connection's id), so no key sits in the outbox in the clear.
 */
export interface DeleteEndpointPayload {
  provider: string;
  connectionId: string;
  endpointId: string;
  apiKeySealed: string;
}

/** Retries start at 30 s and back off to hourly: a provider's outage rarely lasts longer than that. */
const RETRY = { retryBaseMs: 30_000, maxRetryDelayMs: 60 * 60_000 };
/**
 * Until the provider confirms, for this long; then the job is dead (kept for the operator to see).
 * An endpoint left behind only receives events the service answers 404.
 */
export const DELETE_ENDPOINT_GIVE_UP_MS = 30 * 24 * 60 * 60_000;

/** Deletes the endpoint (PaymentService.deleteEndpoint); an endpoint the provider no longer has is done. */
export function deleteEndpointConsumer(deleteEndpoint: (payload: DeleteEndpointPayload) => Promise<void>): JobConsumer {
  return {
    description: 'replaced payment endpoints deleted at their provider',
    handle: (job) => deleteEndpoint(job.payload as DeleteEndpointPayload),
    retryAt: (job: Job, now: number) => (now - job.createdAt >= DELETE_ENDPOINT_GIVE_UP_MS ? null : now + retryDelay(job.attempts, RETRY)),
  };
}

/** A key the provider refuses by now (revoked) can delete nothing there: the job is done, not retried. */
export function isRefusedKey(error: unknown): boolean {
  return error instanceof AppError && error.code === 'invalid_provider_key';
}
