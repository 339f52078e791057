import type { UnitRunner } from '../../core/unit-of-work.ts';
import { SightingTable } from './sighting-table.ts';
import type { LicenseRepository } from './types.ts';

/** How often the sightings are written: a device's lastSeenAt is written at most this often. */
export const SIGHTINGS_FLUSH_MS = 60_000;

/** Sightings written per unit: a flush of many devices commits in bounded steps. */
const BATCH = 500;

/**
 * When each device was last seen (activation, validation, token, heartbeat), kept in memory and
 * written once per flush (every minute, and at shutdown), so a validation costs a table update, not a
 * write (decisions.md, "Licensing model"). A lease's renewal writes its time itself, exactly.
 * A flush that fails keeps its sightings for the next one (newer ones win).
 */
export class DeviceSightings {
  /** The latest time per device, by license key and identifier, off the heap (sighting-table.ts says why). */
  private pending = new SightingTable();

  constructor(
    private readonly repo: Pick<LicenseRepository, 'touchDevices'>,
    private readonly units: UnitRunner,
  ) {}

  seen(key: string, identifier: string, at: number): void {
    this.pending.seen(key, identifier, at);
  }

  /** How many devices wait for the next flush. */
  get size(): number {
    return this.pending.size;
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const sightings = this.pending.take();
    // Decoded a batch at a time, between the batches' writes.
    for (let i = 0; i < sightings.size; i += BATCH) {
      try {
        await this.units.run((unit) => this.repo.touchDevices(unit, sightings.slice(i, i + BATCH)));
      } catch (error) {
        // Kept for the next flush; a device seen again meanwhile keeps its later time.
        for (const s of sightings.slice(i, sightings.size)) this.pending.seen(s.key, s.identifier, s.at);
        throw error;
      }
    }
  }
}
