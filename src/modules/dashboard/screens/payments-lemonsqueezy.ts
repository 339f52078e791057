import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../core/errors.ts';
import { html, type SafeHtml } from '../../../http/html.ts';
import { lemonSqueezyCredential } from '../../payments/lemonsqueezy.ts';
import { ConnectLemonSqueezyBody } from '../../payments/lemonsqueezy-routes.ts';
import type { Connection } from '../../payments/types.ts';
import { fieldErrors, parseWith, text } from '../forms.ts';
import { formOf, redirectWith, type ScreenOptions } from '../screen.ts';
import { disconnectRoute } from './payment-disconnect.ts';
import { actionButton, csrfInput, emptyForm, type FormState, formError, input, type Viewer, when } from '../views.ts';

/** The Lemon Squeezy part of the payments screen (payments.ts): its connection card and connect form. */

const PROVIDER = 'lemonsqueezy';

export const LEMONSQUEEZY_NOTICES = {
  'lemonsqueezy-connected': { tone: 'ok' as const, text: 'Lemon Squeezy is connected. Map a variant to a product to start selling.' },
  'lemonsqueezy-disconnected': { tone: 'ok' as const, text: 'Lemon Squeezy is disconnected: its webhook is deleted and the key forgotten.' },
};

export function lemonSqueezySection(section: string, viewer: Viewer, connection: Connection | undefined, form: FormState = emptyForm({ storeId: '' })): SafeHtml {
  const panel = html`<form class="panel" method="post" action="${section}/lemonsqueezy/connect" novalidate>
<h2>${connection ? 'Replace the Lemon Squeezy key' : 'Connect Lemon Squeezy'}</h2>
${formError(form)}
${csrfInput(viewer.csrf)}
${input({ name: 'apiKey', label: 'Lemon Squeezy API key', type: 'password', form: { ...form, values: {} }, required: true, hint: 'Settings → API in Lemon Squeezy (a test-mode key makes a test connection).', attrs: html` autocomplete="off" maxlength="2048"` })}
${input({ name: 'storeId', label: 'Store ID', form, required: true, hint: 'Digits, from Settings → Stores.', attrs: html` autocomplete="off" maxlength="20" inputmode="numeric"` })}
<div class="form-foot"><button type="submit">${connection ? 'Reconnect' : 'Connect Lemon Squeezy'}</button></div>
</form>`;
  const status = connection
    ? html`<section class="card" aria-labelledby="ls-conn-title"><h2 id="ls-conn-title">Lemon Squeezy is connected</h2>
<dl class="facts">
<div><dt>Mode</dt><dd>${connection.livemode ? 'Live' : 'Test'}</dd></div>
<div><dt>Webhook</dt><dd><code>${connection.webhookEndpointId}</code></dd></div>
<div><dt>Connected</dt><dd>${when(connection.connectedAt)}</dd></div>
</dl>
<div class="form-foot">${actionButton(viewer, `${section}/lemonsqueezy/disconnect`, 'Disconnect Lemon Squeezy…', 'danger')}</div></section>`
    : html`<div class="panel empty-state"><p>Lemon Squeezy is not connected. Paste an API key and the store's ID: its orders and subscriptions then create licenses by themselves.</p></div>`;
  return html`<section class="spaced" aria-labelledby="ls-head"><h2 id="ls-head" class="sr-only">Lemon Squeezy</h2><div class="grid top">${status}${panel}</div></section>`;
}

type Rerender = (req: FastifyRequest, reply: FastifyReply, o: { status: number; lemonSqueezyForm: FormState }) => Promise<unknown>;

export function lemonSqueezyDashboardRoutes(app: FastifyInstance, section: string, services: ScreenOptions['services'], rerender: Rerender): void {
  app.post(`${section}/lemonsqueezy/connect`, async (req, reply) => {
    const f = formOf(req);
    const storeId = text(f.storeId) ?? '';
    try {
      const body = parseWith(ConnectLemonSqueezyBody, { apiKey: text(f.apiKey) ?? '', storeId });
      await services.payments.connect(req.dashboard.principal, PROVIDER, lemonSqueezyCredential(body.apiKey, body.storeId));
      return redirectWith(reply, section, 'lemonsqueezy-connected');
    } catch (error) {
      const errors =
        error instanceof AppError && error.code === 'invalid_provider_key'
          ? { apiKey: error.message }
          : error instanceof AppError && error.code === 'provider_unavailable'
            ? { _form: error.message }
            : error instanceof AppError && error.code === 'invalid_request' && /store/.test(error.message)
              ? { storeId: error.message }
              : fieldErrors(error);
      if (!errors) throw error;
      const status = error instanceof AppError && error.statusCode >= 500 ? error.statusCode : 400;
      return rerender(req, reply, { status, lemonSqueezyForm: { values: { storeId }, errors } });
    }
  });

  disconnectRoute(app, services, { section, path: `${section}/lemonsqueezy/disconnect`, provider: PROVIDER, label: 'Lemon Squeezy', stops: 'orders', notice: 'lemonsqueezy-disconnected' });
}
