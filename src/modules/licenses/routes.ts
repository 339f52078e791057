import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { EmptyResponse, errorResponses, LicenseKeyHeader, pageLimit } from '../../http/schema-helpers.ts';
import { answeredInUnit } from '../../http/idempotency.ts';
import { ProductParams } from '../products/schemas.ts';
import {
  CreateLicenseBody,
  DeviceParams,
  LicensePageBody,
  licenseView,
  ListLicensesQuery,
  ServerActivateBody,
  ServerValidateBody,
  RotateKeyBody,
  ServerValidationBody,
  UpdateLicenseBody,
  serverDeviceView,
} from './schemas.ts';
import type { ActivityCounter } from '../activity/service.ts';
import { LIST_LIMIT_MAX, type LicenseService } from './service.ts';
import type { License } from './types.ts';
import type { SubscriptionSnapshot } from '../../core/events.ts';

const tags = ['Licenses'];
const security = [{ apiKey: [] }];
const licenseReply = { 200: Type.Ref('License'), ...errorResponses(400, 401, 403, 404) };

/** The subscriptions licenses follow (modules/subscriptions), for the views' `subscription`. */
export interface SubscriptionLookup {
  snapshots(accountId: string, licenseKeys: string[]): Promise<Map<string, SubscriptionSnapshot>>;
}

/** Server API for licenses (API key required; every query is scoped to the key's account). */
export const licenseRoutes: FastifyPluginAsyncTypebox<{ licenses: LicenseService; activity?: ActivityCounter; subscriptions?: SubscriptionLookup }> = async (
  app,
  { licenses, activity, subscriptions },
) => {
  /** Licenses as the API shows them, each with its subscription (null when it follows none). */
  const views = async (list: License[]) => {
    const found = subscriptions && list.length ? await subscriptions.snapshots(list[0]!.accountId, list.map((l) => l.key)) : undefined;
    return list.map((l) => licenseView(l, found?.get(l.key) ?? null));
  };
  const view = async (l: License) => (await views([l]))[0]!;

  app.post('/licenses', { schema: { tags, security, operationId: 'create-license', summary: 'Create a license', body: CreateLicenseBody, response: licenseReply } }, async (req, reply) =>
    // A license just made follows no subscription.
    answeredInUnit(req, reply, (l: License) => licenseView(l, null), () => licenses.create(req.principal, req.body)),
  );

  app.get('/licenses', { schema: { tags, security, operationId: 'get-license', summary: 'Get a license', headers: LicenseKeyHeader, response: licenseReply } }, async (req) =>
    view(await licenses.get(req.principal, req.headers['license-key'])),
  );

  app.patch(
    '/licenses',
    { schema: { tags, security, operationId: 'update-license', summary: 'Update a license', headers: LicenseKeyHeader, body: UpdateLicenseBody, response: licenseReply } },
    async (req) => view(await licenses.update(req.principal, req.headers['license-key'], req.body)),
  );

  app.delete(
    '/licenses',
    {
      schema: { tags, security, operationId: 'delete-license', summary: 'Delete a license and its devices', headers: LicenseKeyHeader, response: { 200: EmptyResponse, ...errorResponses(401, 403, 404) } },
    },
    async (req, reply) => {
      await licenses.delete(req.principal, req.headers['license-key']);
      return reply.send();
    },
  );

  app.post(
    '/licenses/rotate-key',
    {
      schema: {
        tags,
        security,
        operationId: 'rotate-license-key',
        summary: 'Give a license a new key',
        description:
          'For a leaked key: the license keeps its devices, purchases, subscription and audit log under a new key; the old key is then unknown everywhere. notify: true e-mails the customer the new key (400 when the license has no e-mail address).',
        headers: LicenseKeyHeader,
        body: Type.Optional(RotateKeyBody),
        response: licenseReply,
      },
    },
    async (req) => licenseView(await licenses.rotateKey(req.principal, req.headers['license-key'], { notify: req.body?.notify })),
  );

  app.post(
    '/licenses/send-email',
    {
      schema: {
        tags,
        security,
        operationId: 'send-license-purchase-email',
        summary: 'Send the purchase e-mail again',
        description: "Queues the purchase e-mail to the license's e-mail address; 400 when it has none.",
        headers: LicenseKeyHeader,
        response: { 200: EmptyResponse, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (req, reply) => {
      await licenses.sendPurchaseEmail(req.principal, req.headers['license-key']);
      return reply.send();
    },
  );

  app.post(
    '/licenses/activate',
    { schema: { tags, security, operationId: 'activate-license', summary: 'Activate a device on a license', headers: LicenseKeyHeader, body: ServerActivateBody, response: licenseReply } },
    async (req) => {
      const license = await licenses.serverActivate(req.principal, req.headers['license-key'], req.body.productId, req.body.device);
      activity?.activated(license.accountId, license.productId);
      return view(license);
    },
  );

  app.post(
    '/licenses/validate',
    {
      schema: {
        tags,
        security,
        operationId: 'validate-license',
        summary: 'Validate a license',
        headers: LicenseKeyHeader,
        body: ServerValidateBody,
        response: { 200: ServerValidationBody, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (req) => {
      const result = await licenses.serverValidate(req.principal, req.headers['license-key'], req.body);
      if (result.isValid) activity?.validated(result.license.accountId, result.license.productId);
      return {
        isValid: result.isValid,
        status: result.status,
        device: result.device && serverDeviceView(result.device),
        license: licenseView(result.license),
      };
    },
  );

  app.post(
    '/licenses/devices/:deviceId/remove',
    { schema: { tags, security, operationId: 'remove-license-device', summary: 'Remove a device from a license', headers: LicenseKeyHeader, params: DeviceParams, response: licenseReply } },
    async (req) => view(await licenses.removeDevice(req.principal, req.headers['license-key'], req.params.deviceId)),
  );

  app.post(
    '/licenses/devices/reset',
    { schema: { tags, security, operationId: 'reset-license-devices', summary: 'Remove every device from a license', headers: LicenseKeyHeader, response: licenseReply } },
    async (req) => view(await licenses.resetDevices(req.principal, req.headers['license-key'])),
  );

  app.get(
    '/products/:productId/licenses',
    {
      schema: {
        tags,
        security,
        operationId: 'list-product-licenses',
        summary: "List a product's licenses",
        params: ProductParams,
        querystring: ListLicensesQuery,
        response: { 200: LicensePageBody, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (req) => {
      const limit = pageLimit(req.query.limit, LIST_LIMIT_MAX);
      const page = await licenses.list(req.principal, req.params.productId, { email: req.query.email, limit, cursor: req.query.cursor });
      return { data: await views(page.data), nextCursor: page.nextCursor };
    },
  );
};

