import type { FastifyReply, FastifyRequest } from 'fastify';
import { html } from '../../../http/html.ts';
import type { Notice } from '../../../http/web/notice.ts';
import { KeyPairBody, UpdateTokenConfigBody } from '../../license-tokens/schemas.ts';
import { VALIDITY_MAX, VALIDITY_MIN } from '../../license-tokens/service.ts';
import { checked, fieldErrors, optional, parseWith, whole } from '../forms.ts';
import { askFirst, confirmed, formOf, redirectWith, render, type Screen, type ScreenOptions } from '../screen.ts';
import { checkbox, csrfInput, emptyForm, type FormState, formError, input, pageHead, select, textarea } from '../views.ts';

const SECTION = '/dashboard/products';
const path = (id: string) => `/dashboard/products/${encodeURIComponent(id)}/tokens`;

async function tokensPage(req: FastifyRequest, reply: FastifyReply, services: ScreenOptions['services'], id: string, o: { status?: number; form?: FormState; keyForm?: FormState; notice?: Notice } = {}) {
  const { principal, viewer } = req.dashboard;
  const product = await services.products.get(principal, id);
  const config = await services.licenseTokens.getConfig(principal, id);
  const others = (await services.products.list(principal)).filter((p) => p.id !== id);
  const form =
    o.form ?? emptyForm({ enabled: config.enabled ? 'on' : undefined, validitySeconds: String(config.validitySeconds), exposePublicKey: config.exposePublicKey ? 'on' : undefined });
  const keyForm = o.keyForm ?? emptyForm({ source: 'new' });
  const jwk = config.publicKeyJwk && JSON.stringify(config.publicKeyJwk, null, 2);
  const keys = config.publicKeyPem
    ? html`<p id="copy-status" class="hint" role="status" aria-live="polite"></p>
<h3 id="pem-title">Public key (PEM)</h3>
<pre class="key-block" id="public-key-pem" aria-labelledby="pem-title">${config.publicKeyPem}</pre>
<div class="form-foot"><button type="button" class="secondary small" data-copy-target="public-key-pem" data-copied="Public key (PEM) copied to the clipboard." hidden>Copy PEM</button></div>
<h3 id="jwk-title">Public key (JWK)</h3>
<pre class="key-block" id="public-key-jwk" aria-labelledby="jwk-title">${jwk}</pre>
<div class="form-foot"><button type="button" class="secondary small" data-copy-target="public-key-jwk" data-copied="Public key (JWK) copied to the clipboard." hidden>Copy JWK</button></div>
<p class="hint">Key ID <code>${config.keyId}</code>. Put the public key in your app to verify tokens offline${config.exposePublicKey ? html`, or fetch it from <code>/api/v1/public/products/${product.id}/license-token/public-key</code>` : ''}.</p>`
    : html`<p class="hint">No key pair yet. Turning tokens on creates one, or create, copy or import one below.</p>`;
  return render(req, reply, {
    status: o.status,
    title: `License tokens · ${product.name}`,
    section: SECTION,
    notice: o.notice,
    content: html`${pageHead('License tokens', html`Signed ES256 tokens let ${product.name} check its license offline.`, undefined, html`<a href="/dashboard/products">Products</a> › <a href="/dashboard/products/${product.id}">${product.name}</a>`)}
<div class="grid top">
<div>
<form class="panel" method="post" action="${path(id)}" novalidate>
<h2>Settings</h2>
${formError(form)}
${csrfInput(viewer.csrf)}
${checkbox({ name: 'enabled', label: 'Issue license tokens on activation', form })}
${input({ name: 'validitySeconds', label: 'Token lifetime (seconds)', type: 'number', form, hint: `${VALIDITY_MIN} (1 hour) to ${VALIDITY_MAX} (1 year); 604800 is 7 days. Apps refresh tokens before they expire.`, attrs: html` min="${VALIDITY_MIN}" max="${VALIDITY_MAX}"` })}
${checkbox({ name: 'exposePublicKey', label: 'Serve the public key on the public API', form })}
<div class="form-foot"><button type="submit">Save settings</button></div>
</form>
<form class="panel spaced" method="post" action="${path(id)}/key-pair" novalidate>
<h2>Replace the key pair</h2>
<p class="hint">Tokens signed with the current key stop verifying against the new public key.</p>
${formError(keyForm)}
${csrfInput(viewer.csrf)}
${select({
  name: 'source',
  label: 'New key pair',
  form: keyForm,
  options: [
    { value: 'new', label: 'Generate a new key pair' },
    ...others.map((p) => ({ value: `copy:${p.id}`, label: `Copy the key pair of ${p.name}` })),
    { value: 'import', label: 'Import a private key (below)' },
  ],
})}
${textarea({ name: 'privateKeyPem', label: 'Private key to import (PKCS#8 PEM, P-256)', form: keyForm, mono: true, hint: 'Only when importing. It is stored encrypted and never shown again.', attrs: html` maxlength="8192" spellcheck="false"` })}
<div class="form-foot"><button type="submit" class="secondary">Replace key pair…</button></div>
</form>
</div>
<section class="card" aria-labelledby="key-title"><h2 id="key-title">Public key</h2>${keys}</section>
</div>`,
  });
}

export const tokensScreen: Screen = {
  area: 'tokens',
  notices: {
    'tokens-saved': { tone: 'ok', text: 'Token settings saved.' },
    'key-replaced': { tone: 'ok', text: 'Key pair replaced. Ship the new public key with your app.' },
  },
  routes: async (app, { services }) => {
    app.get<{ Params: { id: string } }>('/dashboard/products/:id/tokens', async (req, reply) => tokensPage(req, reply, services, req.params.id));

    app.post<{ Params: { id: string } }>('/dashboard/products/:id/tokens', async (req, reply) => {
      const f = formOf(req);
      try {
        const body = parseWith(UpdateTokenConfigBody, { enabled: checked(f.enabled), validitySeconds: whole(f.validitySeconds), exposePublicKey: checked(f.exposePublicKey) });
        await services.licenseTokens.updateConfig(req.dashboard.principal, req.params.id, body);
        return redirectWith(reply, path(req.params.id), 'tokens-saved');
      } catch (error) {
        const errors = fieldErrors(error);
        if (!errors) throw error;
        return tokensPage(req, reply, services, req.params.id, { status: 400, form: { values: f, errors } });
      }
    });

    app.post<{ Params: { id: string } }>('/dashboard/products/:id/tokens/key-pair', async (req, reply) => {
      const f = formOf(req);
      const source = f.source ?? 'new';
      const input = source.startsWith('copy:') ? { copyFromProductId: source.slice(5) } : source === 'import' ? { privateKeyPem: optional(f.privateKeyPem) ?? '' } : {};
      try {
        const body = parseWith(KeyPairBody, input);
        const product = await services.products.get(req.dashboard.principal, req.params.id);
        if (!confirmed(req)) {
          return askFirst(req, reply, {
            section: SECTION,
            title: 'Replace the key pair?',
            text: `Tokens that ${product.name} signed with the current key stop verifying against the new public key. Apps need the new public key.`,
            action: `${path(product.id)}/key-pair`,
            button: 'Replace key pair',
            cancel: path(product.id),
            fields: { source, privateKeyPem: f.privateKeyPem },
          });
        }
        await services.licenseTokens.replaceKeyPair(req.dashboard.principal, product.id, body);
        return redirectWith(reply, path(product.id), 'key-replaced');
      } catch (error) {
        const errors = fieldErrors(error, { copyFromProductId: 'source' });
        if (!errors) throw error;
        return tokensPage(req, reply, services, req.params.id, { status: 400, keyForm: { values: f, errors } });
      }
    });
  },
};
