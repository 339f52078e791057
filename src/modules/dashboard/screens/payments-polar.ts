import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../core/errors.ts';
import { html, type SafeHtml } from '../../../http/html.ts';
import type { Notice } from '../../../http/web/notice.ts';
import { polarCredential } from '../../payments/polar.ts';
import { ConnectPolarBody } from '../../payments/polar-routes.ts';
import type { Connection } from '../../payments/types.ts';
import { checked, fieldErrors, parseWith, text } from '../forms.ts';
import { formOf, redirectWith, type ScreenOptions } from '../screen.ts';
import { disconnectRoute } from './payment-disconnect.ts';
import { actionButton, checkbox, csrfInput, type FormState, formError, input, type Viewer, when } from '../views.ts';

/** The payments screen's Polar part: its connection card and form, and their routes (payments.ts places them). */
const SECTION = '/dashboard/payments';
const POLAR = 'polar';

export const POLAR_NOTICES: Record<string, Notice> = {
  'polar-connected': { tone: 'ok', text: 'Polar is connected. Map a Polar product to a product to start selling.' },
  'polar-disconnected': { tone: 'ok', text: 'Polar is disconnected: its webhook endpoint is deleted and the token forgotten.' },
};

export function polarSection(viewer: Viewer, connection: Connection | undefined, form: FormState): SafeHtml {
  const panel = html`<form class="panel" method="post" action="${SECTION}/polar/connect" novalidate>
<h2>${connection ? 'Replace the Polar token' : 'Connect Polar'}</h2>
${formError(form)}
${csrfInput(viewer.csrf)}
${input({ name: 'accessToken', label: 'Access token', type: 'password', form: { ...form, values: {} }, required: true, hint: 'An organization access token polar_oat_… with the scopes listed in the docs.', attrs: html` autocomplete="off" maxlength="255"` })}
${input({ name: 'organizationId', label: 'Organization ID', form, required: true, hint: 'From Polar: Settings → General.', attrs: html` autocomplete="off" maxlength="64"` })}
${checkbox({ name: 'sandbox', label: "Polar's sandbox (test payments)", form })}
<div class="form-foot"><button type="submit">${connection ? 'Reconnect Polar' : 'Connect Polar'}</button></div>
</form>`;
  const card = connection
    ? html`<section class="card" aria-labelledby="polar-title"><h2 id="polar-title">Polar is connected</h2>
<dl class="facts">
<div><dt>Mode</dt><dd>${connection.livemode ? 'Live' : 'Sandbox'}</dd></div>
<div><dt>Webhook endpoint</dt><dd><code>${connection.webhookEndpointId}</code></dd></div>
<div><dt>Connected</dt><dd>${when(connection.connectedAt)}</dd></div>
</dl>
<div class="form-foot">${actionButton(viewer, `${SECTION}/polar/disconnect`, 'Disconnect Polar…', 'danger')}</div></section>`
    : html`<div class="panel empty-state"><p>Polar is not connected. Create an organization access token in Polar and paste it here with the organization's ID: orders then create licenses by themselves.</p></div>`;
  return html`<section class="spaced" aria-labelledby="polar-head"><h2 id="polar-head" class="sr-only">Polar</h2><div class="grid top">${card}${panel}</div></section>`;
}

/** The page shown again with the Polar form's errors (payments.ts renders it). */
type Reshow = (req: FastifyRequest, reply: FastifyReply, o: { status: number; polarForm: FormState }) => Promise<FastifyReply>;

export function polarRoutes(app: FastifyInstance, services: ScreenOptions['services'], reshow: Reshow): void {
  app.post(`${SECTION}/polar/connect`, async (req, reply) => {
    const f = formOf(req);
    try {
      const body = parseWith(ConnectPolarBody, { accessToken: text(f.accessToken) ?? '', organizationId: text(f.organizationId) ?? '', sandbox: checked(f.sandbox) });
      await services.payments.connect(req.dashboard.principal, POLAR, polarCredential({ accessToken: body.accessToken, organizationId: body.organizationId, sandbox: body.sandbox ?? false }));
      return redirectWith(reply, SECTION, 'polar-connected');
    } catch (error) {
      const errors =
        error instanceof AppError && error.code === 'invalid_provider_key'
          ? { accessToken: error.message }
          : error instanceof AppError && error.code === 'provider_unavailable'
            ? { _form: error.message }
            : fieldErrors(error);
      if (!errors) throw error;
      const status = error instanceof AppError && error.statusCode >= 500 ? error.statusCode : 400;
      return reshow(req, reply, { status, polarForm: { values: { organizationId: f.organizationId, sandbox: f.sandbox }, errors } });
    }
  });

  disconnectRoute(app, services, { section: SECTION, path: `${SECTION}/polar/disconnect`, provider: POLAR, label: 'Polar', stops: 'orders', notice: 'polar-disconnected' });
}
