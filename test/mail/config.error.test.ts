import { expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';

const base = { SECRET_KEY: 'b'.repeat(64), DATA_DIR: '/nonexistent/tessera' };

it('refuses an SMTP_URL that is not smtp:// or smtps:// at start, not at the first e-mail', () => {
  for (const bad of ['mail.example.com:587', 'http://mail.example.com', 'smtp://', 'smtp:///path']) {
    expect(() => loadConfig({ ...base, SMTP_URL: bad })).toThrow('SMTP_URL must be an smtp:// or smtps:// URL');
  }
  expect(loadConfig({ ...base, SMTP_URL: 'smtps://user:pass@mail.example.com:465' }).smtpUrl).toBe('smtps://user:pass@mail.example.com:465');
  expect(loadConfig({ ...base, SMTP_URL: '' }).smtpUrl).toBeUndefined();
});
