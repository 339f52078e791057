export interface WaitOptions {
  /** Give up after this long (default 5 s). */
  timeoutMs?: number;
  /** Pause between checks (default 20 ms). */
  intervalMs?: number;
  /** What was awaited, for the error when it never happens. */
  message?: string;
}

/**
 * Waits until `condition` returns something truthy and resolves with it; throws past the deadline.
 * For conditions a test cannot be told about directly (another process, a background worker):
 * never a fixed sleep that hopes the thing has happened by then. An error thrown by `condition`
 * is not retried: it fails the wait at once.
 */
export async function waitFor<T>(condition: () => T | Promise<T>, options: WaitOptions = {}): Promise<NonNullable<T>> {
  const { timeoutMs = 5000, intervalMs = 20, message = 'condition' } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (Date.now() >= deadline) throw new Error(`waitFor: ${message} not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
