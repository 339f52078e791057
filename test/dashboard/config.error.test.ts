import { expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';

const base = { SECRET_KEY: 'b'.repeat(64), DATA_DIR: '/nonexistent/tessera' };

it('reads SIGNUP (closed by default) and refuses any other value at start', () => {
  expect(loadConfig(base).signup).toBe('closed');
  expect(loadConfig({ ...base, SIGNUP: 'OPEN' }).signup).toBe('open');
  expect(() => loadConfig({ ...base, SIGNUP: 'yes' })).toThrow('SIGNUP must be "open" or "closed", got "yes"');
  expect(loadConfig({ ...base, RATE_LIMIT_DASHBOARD_LOGINS_PER_ADDRESS: '4' }).rateLimit.dashboardLoginsPerAddress).toBe(4);
  expect(() => loadConfig({ ...base, RATE_LIMIT_DASHBOARD_LOGINS_PER_CLIENT: '0' })).toThrow('RATE_LIMIT_DASHBOARD_LOGINS_PER_CLIENT must be an integer >= 1');
});
