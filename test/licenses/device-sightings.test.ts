import { expect, it } from 'vitest';
import type { Unit, UnitRunner } from '../../src/core/unit-of-work.ts';
import { DeviceSightings } from '../../src/modules/licenses/device-sightings.ts';
import type { DeviceSighting } from '../../src/modules/licenses/types.ts';

/** A repository whose writes succeed or fail on demand, recording what each wrote. */
function recorder() {
  const written: DeviceSighting[][] = [];
  let failAt = -1;
  let meanwhile = () => {};
  const repo = {
    touchDevices: async (_unit: Unit, batch: DeviceSighting[]) => {
      if (written.length === failAt) {
        failAt = -1;
        meanwhile(); // validations answered while the failing write was under way
        throw new Error('the store is gone');
      }
      written.push(batch);
    },
  };
  const units: UnitRunner = { run: (work) => work({} as Unit) };
  const failNext = (batches: number, during: () => void) => {
    failAt = written.length + batches;
    meanwhile = during;
  };
  return { written, repo, units, failNext };
}

it('writes in batches of 500, and keeps what a failed batch left for the next flush without moving a newer time back', async () => {
  const { written, repo, units, failNext } = recorder();
  const sightings = new DeviceSightings(repo, units);
  for (let i = 0; i < 1_200; i++) sightings.seen('KEY-A', `device-${i}`, 1_000 + i);
  // The first batch is written, the second fails; meanwhile device-600 is seen again.
  failNext(1, () => sightings.seen('KEY-A', 'device-600', 9_999));
  await expect(sightings.flush()).rejects.toThrow('the store is gone');
  expect(written.map((b) => b.length)).toEqual([500]);
  expect(sightings.size).toBe(700); // the failed batch and the one after it
  sightings.seen('KEY-A', 'device-0', 5_000); // written already: pending again
  await sightings.flush();
  const second = written.slice(1).flat();
  expect(second).toHaveLength(701);
  expect(second.find((s) => s.identifier === 'device-600')!.at).toBe(9_999);
  expect(second.find((s) => s.identifier === 'device-700')!.at).toBe(1_700);
  expect(second.find((s) => s.identifier === 'device-0')!.at).toBe(5_000);
  expect(sightings.size).toBe(0);
});
