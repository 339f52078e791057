import { expect, it } from 'vitest';
import { idBase62, timeOrderedFloor, timeOrderedId } from '../../src/core/ids.ts';

it('idBase62 gives base62 strings of the length asked, distinct across more than one pool of bytes', () => {
  const ids = Array.from({ length: 2000 }, () => idBase62(20)); // 40,000 characters: several 4 KiB refills
  for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9]{20}$/);
  expect(new Set(ids).size).toBe(ids.length);
  // Every symbol turns up: the bytes are spread over the whole alphabet.
  expect(new Set(ids.join('')).size).toBe(62);
});

it('timeOrderedId sorts by time and stays at or above the floor of its time', () => {
  const at = Date.UTC(2026, 10, 24);
  const earlier = timeOrderedId(at - 1);
  const later = timeOrderedId(at);
  expect(later).toMatch(/^[0-9a-z]{13}[A-Za-z0-9]{8}$/);
  expect(earlier < later).toBe(true);
  expect(later >= timeOrderedFloor(at)).toBe(true);
  expect(earlier < timeOrderedFloor(at)).toBe(true);
});
