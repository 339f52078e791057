/**
 * One lastSeenAt flush of every seeded device (device-sightings.ts), timed in-process on the store
 * DATABASE_URL names (a fresh database, created here) or on SQLite: wall time, CPU, and the longest
 * event-loop stall while it ran. Pass another checkout's root to time its code on the same seed:
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --import tsx bench/sightings-flush.ts . 100000
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --import tsx bench/sightings-flush.ts /tmp/tessera-before 100000
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pg from 'pg';
import { deviceOf, seed } from './seed.ts';

const root = resolve(process.argv[2] ?? '.');
const count = Number(process.argv[3] ?? 100_000);
const dataDir = mkdtempSync(join(tmpdir(), 'tessera-flush-'));
let databaseUrl = process.env.DATABASE_URL;
if (databaseUrl) {
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  await admin.query('drop database if exists tessera_flush_bench');
  await admin.query('create database tessera_flush_bench');
  await admin.end();
  const url = new URL(databaseUrl);
  url.pathname = '/tessera_flush_bench';
  databaseUrl = url.toString();
}
const { keys } = await seed({ databaseUrl, dataDir }, count);

const { openStore } = await import(`${root}/src/storage/index.ts`);
const { SqlLicenseRepository } = await import(`${root}/src/modules/licenses/repository.ts`);
const { StoreUnits } = await import(`${root}/src/storage/unit-of-work.ts`);
const { EventBus } = await import(`${root}/src/core/unit-of-work.ts`);
const { DeviceSightings } = await import(`${root}/src/modules/licenses/device-sightings.ts`);
const store = await openStore({ databaseUrl, dataDir });
try {
  for (let round = 1; round <= 3; round++) {
    const sightings = new DeviceSightings(new SqlLicenseRepository(store), new StoreUnits(store, new EventBus()));
    const at = Date.now();
    keys.forEach((key, i) => sightings.seen(key, deviceOf(i), at));
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    const cpu = process.cpuUsage();
    const start = performance.now();
    await sightings.flush();
    const wall = performance.now() - start;
    const used = process.cpuUsage(cpu);
    loop.disable();
    console.log(
      `${root} ${store.dialect} ${count} devices, round ${round}: ${(wall / 1000).toFixed(2)} s wall, ${((used.user + used.system) / 1e6).toFixed(2)} s CPU, longest loop stall ${(loop.max / 1e6).toFixed(1)} ms`,
    );
  }
} finally {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
}
