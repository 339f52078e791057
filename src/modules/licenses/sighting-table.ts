import type { DeviceSighting } from './types.ts';

const INITIAL_ENTRIES = 1024;
const INITIAL_UNITS = 32 * 1024;
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/**
 * The devices seen since the last flush, each with the latest time it was seen, kept outside the
 * JavaScript heap: each device's license key and identifier as UTF-16 code units (exact for any
 * string, lone surrogates included) back to back in one typed array, found again through an
 * open-addressing table of typed arrays.
 *
 * Why not a Map of objects: nearly every validation adds a device, and a minute of them (a string
 * key, an object, a boxed time, the map's entry) lived on the heap until the flush. Under load the
 * garbage collector copied them at every scavenge and marked them in old space, in steps that
 * stalled every request for 16-28 ms (docs/benchmarks.md, "Issue 32: device sightings off the
 * heap"). Here a sighting leaves nothing for the collector. The strings are read with charCodeAt (no native call per
 * sighting) and copied only for a new device.
 */
export class SightingTable {
  private units = new Uint16Array(INITIAL_UNITS);
  private used = 0;
  private count = 0;
  /** Entry i at 3i: where its key's code units start, where they end and its identifier's begin, where those end. */
  private entries!: Uint32Array;
  private times!: Float64Array;
  /**
   * Open addressing, linear probing, two numbers a slot: the entry's hash, and its index + 1 (0: an
   * empty slot). The hash beside the index spares a probe a visit to an entry it does not match.
   * Twice as many slots as entries' room, so at most half full.
   */
  private slots!: Uint32Array;

  constructor() {
    this.allocate(INITIAL_ENTRIES);
  }

  get size(): number {
    return this.count;
  }

  /** Records that the device was seen at `at`; a device already recorded keeps the later time. */
  seen(key: string, identifier: string, at: number): void {
    const hash = hashOf(key, identifier);
    const slots = this.slots;
    const mask = (slots.length >> 1) - 1;
    let slot = hash & mask;
    for (let taken = slots[2 * slot + 1]!; taken !== 0; taken = slots[2 * slot + 1]!) {
      if (slots[2 * slot] === hash && this.holds(taken - 1, key, identifier)) {
        if (at > this.times[taken - 1]!) this.times[taken - 1] = at;
        return;
      }
      slot = (slot + 1) & mask;
    }
    if (this.count === this.times.length) slot = this.growEntries(hash);
    const i = this.count++;
    this.entries[3 * i] = this.used;
    this.entries[3 * i + 1] = this.append(key);
    this.entries[3 * i + 2] = this.append(identifier);
    this.times[i] = at;
    this.slots[2 * slot] = hash;
    this.slots[2 * slot + 1] = i + 1;
  }

  /**
   * Takes every recorded sighting out (the table is then empty), to be read in slices: decoding a
   * minute of sightings at once (100,000 devices) would hold the event loop for tens of milliseconds.
   */
  take(): TakenSightings {
    const taken = new TakenSightings(this.units, this.entries, this.times, this.count);
    this.allocate(INITIAL_ENTRIES);
    this.units = new Uint16Array(INITIAL_UNITS);
    this.count = 0;
    this.used = 0;
    return taken;
  }

  /** Whether entry i is this key and identifier, code unit by code unit. */
  private holds(i: number, key: string, identifier: string): boolean {
    const start = this.entries[3 * i]!;
    const keyEnd = this.entries[3 * i + 1]!;
    if (keyEnd - start !== key.length || this.entries[3 * i + 2]! - keyEnd !== identifier.length) return false;
    const units = this.units;
    for (let c = 0; c < key.length; c++) if (units[start + c] !== key.charCodeAt(c)) return false;
    for (let c = 0; c < identifier.length; c++) if (units[keyEnd + c] !== identifier.charCodeAt(c)) return false;
    return true;
  }

  /** Copies the string's code units after the last entry's; returns where they end. */
  private append(text: string): number {
    if (this.used + text.length > this.units.length) {
      const bigger = new Uint16Array(Math.max(this.units.length * 2, this.used + text.length));
      bigger.set(this.units.subarray(0, this.used));
      this.units = bigger;
    }
    const units = this.units;
    let p = this.used;
    for (let c = 0; c < text.length; c++) units[p++] = text.charCodeAt(c);
    return (this.used = p);
  }

  /** Empty entry arrays for `entries` devices, and their slots. */
  private allocate(entries: number): void {
    this.entries = new Uint32Array(3 * entries);
    this.times = new Float64Array(entries);
    this.slots = new Uint32Array(2 * 2 * entries);
  }

  /** Twice the entries' room (and slots, so they stay at most half full); returns the free slot for `hash`. */
  private growEntries(hash: number): number {
    const { entries, times, slots } = this;
    this.allocate(times.length * 2);
    this.entries.set(entries);
    this.times.set(times);
    for (let s = 0; s < slots.length; s += 2) {
      if (slots[s + 1] === 0) continue;
      const free = this.freeSlot(slots[s]!);
      this.slots[2 * free] = slots[s]!;
      this.slots[2 * free + 1] = slots[s + 1]!;
    }
    return this.freeSlot(hash);
  }

  private freeSlot(hash: number): number {
    const mask = (this.slots.length >> 1) - 1;
    let slot = hash & mask;
    while (this.slots[2 * slot + 1] !== 0) slot = (slot + 1) & mask;
    return slot;
  }
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Sightings taken out of a table, in the order the devices were first seen. */
export class TakenSightings {
  /** The code units' bytes, read as UTF-16LE by Buffer's native decoder (typed arrays are in the host's byte order). */
  private readonly bytes: Buffer;

  constructor(
    private readonly units: Uint16Array,
    private readonly entries: Uint32Array,
    private readonly times: Float64Array,
    readonly size: number,
  ) {
    this.bytes = Buffer.from(units.buffer, units.byteOffset, units.byteLength);
  }

  slice(from: number, to: number): DeviceSighting[] {
    const e = this.entries;
    const sightings: DeviceSighting[] = [];
    for (let i = from; i < Math.min(to, this.size); i++) sightings.push({ key: this.text(e[3 * i]!, e[3 * i + 1]!), identifier: this.text(e[3 * i + 1]!, e[3 * i + 2]!), at: this.times[i]! });
    return sightings;
  }

  private text(from: number, to: number): string {
    if (LITTLE_ENDIAN) return this.bytes.toString('utf16le', 2 * from, 2 * to);
    let text = '';
    for (let p = from; p < to; p++) text += String.fromCharCode(this.units[p]!);
    return text;
  }
}

/** FNV-1a over the code units, two at a time, with the key's length in it ("ab"+"c" is not "a"+"bc"). */
function hashOf(key: string, identifier: string): number {
  return hashUnits(identifier, hashUnits(key, Math.imul(FNV_OFFSET ^ key.length, FNV_PRIME))) >>> 0;
}

function hashUnits(text: string, h: number): number {
  const last = text.length - 1;
  let c = 0;
  for (; c < last; c += 2) h = Math.imul(h ^ (text.charCodeAt(c) | (text.charCodeAt(c + 1) << 16)), FNV_PRIME);
  if (c === last) h = Math.imul(h ^ text.charCodeAt(c), FNV_PRIME);
  return h;
}
