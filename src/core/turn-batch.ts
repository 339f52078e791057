/**
 * Runs the jobs queued during one event-loop turn back to back, in the turn's check phase
 * (setImmediate), once the poll phase has run the handlers of every request that arrived with it.
 *
 * Why: work with a large working set costs about twice as much alone between two requests as it
 * does in a tight loop, because each request's HTTP work evicts it from the core's caches (an ES256
 * signature: P-256's precomputed table and OpenSSL's code; a SQLite lookup: its B-tree pages and
 * the VDBE). Run together, only the first job of a turn pays that (docs/benchmarks.md, "Token
 * refresh and validate (perf-refresh)"). Jobs share nothing but the moment they run: each returns
 * its own result, and one that throws rejects only its own promise.
 */
export class TurnBatch {
  private jobs: (() => void)[] = [];

  run<T>(job: () => T | PromiseLike<T>): Promise<T> {
    return new Promise((resolve, reject) => {
      if (this.jobs.length === 0) setImmediate(this.flush);
      this.jobs.push(() => {
        try {
          resolve(job());
        } catch (error) {
          reject(error);
        }
      });
    });
  }

  private readonly flush = (): void => {
    const jobs = this.jobs;
    this.jobs = [];
    for (const job of jobs) job();
  };
}
