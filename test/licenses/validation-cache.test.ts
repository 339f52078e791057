import { describe, expect, it } from 'vitest';
import { ValidationCache } from '../../src/modules/licenses/validation-cache.ts';
import type { ValidationRow } from '../../src/modules/licenses/types.ts';
import type { ChangeFeed, ChangeListener } from '../../src/storage/change-feed.ts';

class FakeFeed implements ChangeFeed {
  live = true;
  listener!: ChangeListener;
  subscribe(listener: ChangeListener) {
    this.listener = listener;
  }
  fence = async () => {};
  close = async () => {};
}

const row = (key: string, name = 'Laptop', device = true, identifier = 'd'): ValidationRow =>
  ({ license: { key, accountId: `acc-${key.length}`, productId: 'p_1' } as ValidationRow['license'], fallbackEnabled: false, device: device ? { identifier, name, activationDate: 0 } : null }) as ValidationRow;

function setup(capacity = 100) {
  const feed = new FakeFeed();
  const cache = new ValidationCache(feed, capacity);
  let loads = 0;
  let next: ValidationRow | undefined;
  const read = (key: string, identifier = 'd') => cache.read(key, identifier, async () => (loads++, next ?? row(key, 'Laptop', true, identifier)));
  return { feed, cache, read, loads: () => loads, answer: (r: ValidationRow | undefined) => (next = r) };
}

describe('ValidationCache', () => {
  it('answers a second read from memory, and reads again what the feed names', async () => {
    const { feed, cache, read, loads, answer } = setup();
    await read('K1');
    await read('K1');
    expect(loads()).toBe(1);
    expect(cache.stats()).toEqual({ hits: 1, misses: 1, entries: 1 });
    answer(row('K1', 'Renamed'));
    feed.listener.changed('K1');
    expect((await read('K1'))!.device!.name).toBe('Renamed');
    expect(loads()).toBe(2);
  });

  it('keeps no row read while its license changed, nor a row without an active device', async () => {
    const { feed, read, loads, answer, cache } = setup();
    let release!: () => void;
    const slow = cache.read('K2', 'd', () => new Promise((resolve) => (release = () => resolve(row('K2', 'old')))));
    feed.listener.changed('K2'); // committed while the read was in flight: its answer may predate the change
    release();
    expect((await slow)!.device!.name).toBe('old');
    await read('K2');
    expect(loads()).toBe(1); // the in-flight answer was not kept: this one read the store

    answer(row('K3', 'x', false));
    await read('K3');
    await read('K3');
    expect(loads()).toBe(3);
  });

  it('trusts nothing while the feed is down, and starts over on a reset', async () => {
    const { feed, read, loads, cache } = setup();
    await read('K4');
    feed.live = false;
    await read('K4');
    await read('K4');
    expect(loads()).toBe(3);
    feed.live = true;
    feed.listener.reset();
    await read('K4');
    await read('K4');
    expect(loads()).toBe(4);
    expect(cache.stats().entries).toBe(1);
  });

  it("keeps several devices of one license, and drops them all when the license changes", async () => {
    const { feed, read, loads, cache } = setup();
    for (const device of ['d1', 'd2', 'd3']) await read('K5', device);
    for (const device of ['d1', 'd2', 'd3']) expect((await read('K5', device))!.device!.identifier).toBe(device);
    expect(loads()).toBe(3);
    expect(cache.stats().entries).toBe(3);
    feed.listener.changed('K5');
    expect(cache.stats().entries).toBe(0);
    await read('K5', 'd2');
    expect(loads()).toBe(4);
  });

  it('holds at most its capacity, dropping the license cached first', async () => {
    const { read, loads, cache } = setup(3);
    for (const key of ['A', 'B', 'C', 'D']) await read(key);
    expect(cache.stats().entries).toBe(3);
    await read('D');
    await read('B');
    expect(loads()).toBe(4);
    await read('A');
    expect(loads()).toBe(5);
  });
});
