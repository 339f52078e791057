import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses, LicenseKeyHeader, pageLimit } from '../../http/schema-helpers.ts';
import { AccountEventsBody, AccountEventsQuery, accountEventView, AuditPageBody, AuditQuery, auditView } from './schemas.ts';
import type { AuditType } from './service.ts';
import { AUDIT_LIMIT_MAX, type AuditService } from './service.ts';

/** Server API: a license's audit log (API key required; scoped to the key's account). */
export const auditRoutes: FastifyPluginAsyncTypebox<{ audit: AuditService }> = async (app, { audit }) => {
  app.get(
    '/licenses/events',
    {
      schema: {
        operationId: 'list-license-events',
        tags: ['Licenses'],
        security: [{ apiKey: [] }],
        summary: "A license's audit log, newest first",
        description: 'Every change with its actor and time; kept AUDIT_RETENTION_DAYS (365 by default), also after the license is deleted.',
        headers: LicenseKeyHeader,
        querystring: AuditQuery,
        response: { 200: AuditPageBody, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (req) => {
      const limit = pageLimit(req.query.limit, AUDIT_LIMIT_MAX);
      const page = await audit.list(req.principal, req.headers['license-key'], { limit, cursor: req.query.cursor });
      return { data: page.data.map(auditView), nextCursor: page.nextCursor };
    },
  );

  app.get(
    '/events',
    {
      schema: {
        operationId: 'list-events',
        tags: ['Licenses'],
        security: [{ apiKey: [] }],
        summary: "The account's audit log, newest first",
        description:
          'Every license and device change of the account with its license key, actor and time, filtered by type and license key; kept AUDIT_RETENTION_DAYS. A key the account does not have finds nothing.',
        querystring: AccountEventsQuery,
        response: { 200: AccountEventsBody, ...errorResponses(400, 401, 403) },
      },
    },
    async (req) => {
      const limit = pageLimit(req.query.limit, AUDIT_LIMIT_MAX);
      const page = await audit.listAccount(req.principal, { type: req.query.type as AuditType | undefined, licenseKey: req.query.licenseKey, limit, cursor: req.query.cursor });
      return { data: page.data.map(accountEventView), nextCursor: page.nextCursor };
    },
  );
};
