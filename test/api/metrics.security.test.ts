import { expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { forEachStore } from '../support/stores.ts';

forEachStore('GET /metrics with METRICS_TOKEN', (kind) => {
  const token = 'metrics-secret-token';
  const ctx = useTestApp(kind, { env: { METRICS_TOKEN: token } });
  const scrape = (authorization?: string) => ctx.app.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });

  it('requires the bearer token, refuses another one, and serves with it', async () => {
    const missing = await scrape();
    expect(missing.statusCode).toBe(401);
    expect(missing.json().error.code).toBe('missing_api_key');
    expect(missing.body).not.toContain('tessera_');
    for (const wrong of [`Bearer ${token}x`, 'Bearer ', `Basic ${token}`]) {
      const res = await scrape(wrong);
      expect([401, 403]).toContain(res.statusCode);
      expect(res.body).not.toContain('tessera_');
    }
    expect((await scrape(`Bearer ${token}x`)).json().error.code).toBe('invalid_api_key');
    const ok = await scrape(`Bearer ${token}`);
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toContain('tessera_http_request_duration_seconds');
  });
});
