import { describe, expect, it } from 'vitest';
import { SightingTable } from '../../src/modules/licenses/sighting-table.ts';

/** Everything in the table, taken out and read in slices of 7 (as the flush reads them, in batches). */
const drain = (table: SightingTable): DeviceSighting[] => {
  const taken = table.take();
  const all: DeviceSighting[] = [];
  for (let i = 0; i < taken.size; i += 7) all.push(...taken.slice(i, i + 7));
  return all;
};
import type { DeviceSighting } from '../../src/modules/licenses/types.ts';

const byDevice = (a: DeviceSighting, b: DeviceSighting) => (a.key + '\n' + a.identifier < b.key + '\n' + b.identifier ? -1 : 1);

describe('SightingTable', () => {
  it('keeps one entry per device with its latest time, and is empty once taken', () => {
    const table = new SightingTable();
    table.seen('AAAA-BBBB', 'pc', 100);
    table.seen('AAAA-BBBB', 'pc', 300);
    table.seen('AAAA-BBBB', 'pc', 200); // an older time never replaces a later one
    table.seen('AAAA-BBBB', 'laptop', 150);
    expect(table.size).toBe(2);
    expect(drain(table)).toEqual([
      { key: 'AAAA-BBBB', identifier: 'pc', at: 300 },
      { key: 'AAAA-BBBB', identifier: 'laptop', at: 150 },
    ]);
    expect(table.size).toBe(0);
    expect(drain(table)).toEqual([]);
    table.seen('AAAA-BBBB', 'pc', 400);
    expect(drain(table)).toEqual([{ key: 'AAAA-BBBB', identifier: 'pc', at: 400 }]);
  });

  it('tells devices apart where key and identifier meet, and keeps any string exactly (non-Latin, emoji, lone surrogates)', () => {
    const table = new SightingTable();
    const devices: [string, string][] = [
      ['AB', 'C'],
      ['A', 'BC'],
      ['K', 'Écran d’Ölaf'],
      ['K', 'ноутбук 🚀'],
      ['K', '\uD800'], // a lone high surrogate: UTF-8 would turn it into U+FFFD
      ['K', '\uDBFF'],
      ['K', '\uFFFD'],
      ['K', ''],
      ['K', 'a\nb'],
    ];
    devices.forEach(([key, identifier], i) => table.seen(key, identifier, i));
    expect(drain(table)).toEqual(devices.map(([key, identifier], i) => ({ key, identifier, at: i })));
  });

  it('agrees with a Map through growth and reuse (20,000 devices, three rounds)', () => {
    const table = new SightingTable();
    let seed = 7;
    const random = (n: number) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n);
    for (const [devices, sightings] of [
      [20_000, 60_000],
      [50, 400],
      [3_000, 9_000],
    ] as const) {
      const model = new Map<string, DeviceSighting>();
      for (let n = 0; n < sightings; n++) {
        const d = random(devices);
        const key = `KEY-${d % 997}`;
        const identifier = `device-${d}-${'x'.repeat(d % 40)}`;
        const at = random(1_000_000);
        table.seen(key, identifier, at);
        const id = `${key}\n${identifier}`;
        const known = model.get(id);
        if (!known || known.at < at) model.set(id, { key, identifier, at });
      }
      expect(table.size).toBe(model.size);
      expect(drain(table).sort(byDevice)).toEqual([...model.values()].sort(byDevice));
    }
  });
});
