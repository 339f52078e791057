import { describe, expect, it } from 'vitest';
import { TurnBatch } from '../../src/core/turn-batch.ts';

describe('TurnBatch (the jobs of one event-loop turn run together)', () => {
  it('runs the jobs queued in a turn after it, in order, each with its own result', async () => {
    const batch = new TurnBatch();
    const ran: string[] = [];
    const pending = ['a', 'b', 'c'].map((name) =>
      batch.run(() => {
        ran.push(name);
        return name.toUpperCase();
      }),
    );
    expect(ran).toEqual([]); // not inside the turn that queued them
    expect(await Promise.all(pending)).toEqual(['A', 'B', 'C']);
    expect(ran).toEqual(['a', 'b', 'c']);
  });

  it('rejects only the job that threw, and passes on what an asynchronous job settles to', async () => {
    const batch = new TurnBatch();
    const [failed, sync, async_] = await Promise.allSettled([
      batch.run(() => {
        throw new Error('no signature');
      }),
      batch.run(() => 1),
      batch.run(async () => 2),
    ]);
    expect(failed).toMatchObject({ status: 'rejected', reason: { message: 'no signature' } });
    expect(sync).toEqual({ status: 'fulfilled', value: 1 });
    expect(async_).toEqual({ status: 'fulfilled', value: 2 });
  });

  it('starts a new batch for jobs queued while one runs', async () => {
    const batch = new TurnBatch();
    const order: string[] = [];
    await batch.run(async () => {
      order.push('first');
      const inner = batch.run(() => order.push('inner'));
      order.push('first done');
      await inner;
    });
    expect(order).toEqual(['first', 'first done', 'inner']);
  });
});
