import { createHash } from 'node:crypto';
import type { SecretBox } from '../../core/secret-box.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';
import type { AccountService } from '../accounts/service.ts';
import type { MailQueue } from '../mail/queue.ts';
import { webhookDisabledMail } from '../mail/templates.ts';
import type { Job, Outbox } from '../outbox/outbox.ts';
import type { JobConsumer } from '../outbox/worker.ts';
import { signatureHeader } from './payload.ts';
import type { WebhookSender } from './sender.ts';
import { type DeliveryTarget, endpointDisabled, type WebhookRepository } from './types.ts';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * Delay before each retry, after the attempt that failed. With attempts cut off at the answer
 * timeout (10 s by default) the first retry starts within 30 s of the event and the second
 * within 90 s; the last of the 11 attempts comes about 31.5 hours after the event.
 */
export const RETRY_DELAYS_MS = [10 * SECOND, 45 * SECOND, 5 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR, 4 * HOUR, 8 * HOUR, 8 * HOUR, 8 * HOUR];
/** An endpoint whose deliveries have all failed for this long is disabled. */
export const DISABLE_AFTER_MS = 24 * HOUR;

/** ±10% on the longer delays, derived from the job (so the same job always gets the same time). */
function jitter(jobId: string, attempts: number, delay: number): number {
  if (delay < 5 * MINUTE) return delay;
  const fraction = createHash('sha256').update(`${jobId}:${attempts}`).digest().readUInt32BE(0) / 2 ** 32;
  return Math.round(delay * (0.9 + 0.2 * fraction));
}

/** When a failed delivery job runs again, or null after the last attempt. */
export function webhookRetryAt(job: Pick<Job, 'id' | 'attempts'>, now: number): number | null {
  const delay = RETRY_DELAYS_MS[job.attempts - 1];
  return delay === undefined ? null : now + jitter(job.id, job.attempts, delay);
}

/**
 * The outbox consumer that sends deliveries: signs the stored body, POSTs it, and records the
 * attempt (status code, duration, error) with the delivery's new state in one unit. A non-2xx
 * answer or no answer throws, so the outbox retries on the schedule above; an endpoint failing
 * for 24 hours is disabled in that same unit, with an e-mail to the account queued with it.
 */
/** What an attempt came to: sent; failed, retried later; failed for good (its last attempt, or its endpoint disabled). */
export type AttemptOutcome = 'succeeded' | 'retrying' | 'failed';

export class WebhookDeliverer implements JobConsumer {
  readonly description = 'operator webhooks';
  /** Attempts by outcome since the process started (GET /metrics). */
  readonly outcomes: Record<AttemptOutcome, number> = { succeeded: 0, retrying: 0, failed: 0 };
  /** An attempt is over within its timeouts: a crashed worker's deliveries are retried soon after. */
  readonly leaseMs: number;

  constructor(
    private readonly repo: WebhookRepository,
    private readonly units: UnitRunner,
    private readonly sender: WebhookSender,
    private readonly secrets: SecretBox,
    private readonly accounts: AccountService,
    private readonly mail: MailQueue,
    private readonly outbox: Outbox,
    private readonly clock: () => number = Date.now,
  ) {
    this.leaseMs = sender.settings.connectTimeoutMs + sender.settings.timeoutMs + 15_000;
  }

  retryAt(job: Job, now: number): number | null {
    return webhookRetryAt(job, now);
  }

  async handle(job: Job): Promise<'completed' | undefined> {
    const { deliveryId } = job.payload as { deliveryId: string };
    const target = await this.repo.loadTarget(deliveryId);
    if (!target) return; // its endpoint was deleted, and its deliveries with it
    if (!target.enabled) {
      await this.units.run(async (unit) => {
        await this.repo.recordAttempt(unit, endpointDisabled(deliveryId, this.clock()));
        await this.outbox.complete(job.id, job.claimedBy, unit);
      });
      this.outcomes.failed++;
      return 'completed';
    }
    const attemptedAt = this.clock();
    const answer = await this.sender.post(target.url, target.body, this.headers(target, attemptedAt));
    const success = answer.statusCode !== null && answer.statusCode >= 200 && answer.statusCode < 300;
    const now = this.clock();
    const retryAt = success ? null : this.retryAt(job, now);
    const error = success ? null : (answer.error ?? `HTTP ${answer.statusCode}`);
    const disabled = await this.units.run(async (unit) => {
      let disabled = false;
      if (success) await this.repo.clearFailing(unit, target.endpointId);
      else disabled = await this.repo.markFailing(unit, target.endpointId, now, now - DISABLE_AFTER_MS);
      if (disabled) await this.notifyDisabled(unit, target);
      const status = success ? 'succeeded' : disabled || retryAt === null ? 'failed' : 'pending';
      await this.repo.recordAttempt(unit, {
        deliveryId,
        attemptedAt,
        statusCode: answer.statusCode,
        durationMs: answer.durationMs,
        success,
        error,
        // What was sent: the signature header is shown (it only proves this one body), the secret never is.
        requestHeaders: answer.requestHeaders,
        response: answer.answer,
        status,
        nextAttemptAt: status === 'pending' ? retryAt : null,
      });
      // The job ends with its outcome in one write; a failure to retry goes back to the worker.
      if (success || disabled) await this.outbox.complete(job.id, job.claimedBy, unit);
      return disabled;
    });
    this.outcomes[success ? 'succeeded' : disabled || retryAt === null ? 'failed' : 'retrying']++;
    if (!success && !disabled) throw new Error(`webhook ${deliveryId} to ${new URL(target.url).host}: ${error}`);
    return 'completed';
  }

  close(): void {
    this.sender.close();
  }

  private headers(target: DeliveryTarget, now: number): Record<string, string> {
    const secret = this.secrets.open(target.secretSealed, target.endpointId);
    return {
      'tessera-signature': signatureHeader(secret, target.body, Math.floor(now / 1000)),
      'tessera-event-id': target.eventId,
      'tessera-event-type': target.eventType,
      'tessera-delivery-id': target.deliveryId,
    };
  }

  private async notifyDisabled(unit: Unit, target: DeliveryTarget): Promise<void> {
    const account = await this.accounts.findById(target.accountId, unit);
    if (!account) return;
    const mail = webhookDisabledMail({ url: target.url, endpointId: target.endpointId });
    await this.mail.queue(unit, { kind: 'webhook_disabled', to: account.email, replyTo: null, ...mail });
  }
}
