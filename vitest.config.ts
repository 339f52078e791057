import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Suites open their own stores (a temp dir, or a fresh PostgreSQL database), so files run in parallel.
    pool: 'forks',
  },
});
