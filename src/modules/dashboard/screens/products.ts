import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../core/errors.ts';
import { html, type SafeHtml } from '../../../http/html.ts';
import type { Notice } from '../../../http/web/notice.ts';
import { CreateProductBody, UpdateProductBody } from '../../products/schemas.ts';
import type { Product, ProductFields } from '../../products/service.ts';
import { activityChart } from '../chart.ts';
import { checked, fieldErrors, nullable, parseWith, text, whole } from '../forms.ts';
import { codesOf, codesProblem, defined, withIssues } from '../model-fields.ts';
import { askFirst, confirmed, formOf, redirectWith, render, type Screen } from '../screen.ts';
import { actionButton, checkbox, csrfInput, emptyForm, emptyState, type FormState, formError, input, pageHead, table, textarea, when } from '../views.ts';

const SECTION = '/dashboard/products';
const path = (p: { id: string }) => `/dashboard/products/${encodeURIComponent(p.id)}`;

/** The product form's fields as the server API names them. */
function productBody(f: Record<string, string | undefined>) {
  return {
    name: text(f.name) ?? '',
    description: text(f.description) ?? '',
    supportEmail: nullable(f.supportEmail),
    portalShow: checked(f.portalShow),
    portalAllowDeviceReset: checked(f.portalAllowDeviceReset),
    portalDeviceResetLimit: whole(f.portalDeviceResetLimit),
    portalDeviceResetWindowDays: whole(f.portalDeviceResetWindowDays),
    fallbackEnabled: checked(f.fallbackEnabled),
    purchaseNote: nullable(f.purchaseNote),
    actionButtonText: nullable(f.actionButtonText),
    actionButtonUrl: nullable(f.actionButtonUrl),
    defaultEntitlements: f.defaultEntitlements === undefined ? undefined : codesOf(f.defaultEntitlements),
    // An emptied number keeps its stored value (the API's PATCH takes these settings field by field).
    floating: defined({ enabled: checked(f.floatingEnabled), leaseSeconds: whole(f.leaseSeconds) }),
    trial: defined({ enabled: checked(f.trialEnabled), days: whole(f.trialDays), maxDevices: whole(f.trialMaxDevices) }),
  };
}

/** The form's nested settings under the names of their fields. */
const RENAME = { 'floating.leaseSeconds': 'leaseSeconds', 'floating.enabled': 'floatingEnabled', 'trial.days': 'trialDays', 'trial.maxDevices': 'trialMaxDevices', 'trial.enabled': 'trialEnabled' };

/** The form checked against the API's schema, entitlement codes named when wrong: every field's problem at once. */
function parseProduct<T extends typeof CreateProductBody | typeof UpdateProductBody>(schema: T, f: Record<string, string | undefined>) {
  const body = productBody(f);
  const problem = body.defaultEntitlements && codesProblem(body.defaultEntitlements);
  return withIssues(problem ? [{ path: 'defaultEntitlements', message: problem }] : [], () => parseWith(schema, body));
}

const on = (b: boolean) => (b ? 'on' : undefined);
const productValues = (p: Pick<Product, keyof ProductFields>) => ({
  name: p.name,
  description: p.description,
  supportEmail: p.supportEmail ?? '',
  portalShow: on(p.portalShow),
  portalAllowDeviceReset: on(p.portalAllowDeviceReset),
  portalDeviceResetLimit: String(p.portalDeviceResetLimit),
  portalDeviceResetWindowDays: String(p.portalDeviceResetWindowDays),
  fallbackEnabled: on(p.fallbackEnabled),
  purchaseNote: p.purchaseNote ?? '',
  actionButtonText: p.actionButtonText ?? '',
  actionButtonUrl: p.actionButtonUrl ?? '',
  defaultEntitlements: p.defaultEntitlements.join(' '),
  floatingEnabled: on(p.floating.enabled),
  leaseSeconds: String(p.floating.leaseSeconds),
  trialEnabled: on(p.trial.enabled),
  trialDays: String(p.trial.days),
  trialMaxDevices: String(p.trial.maxDevices),
});
const NEW_PRODUCT = productValues({
  name: '',
  description: '',
  supportEmail: null,
  portalShow: true,
  portalAllowDeviceReset: true,
  portalDeviceResetLimit: 3,
  portalDeviceResetWindowDays: 30,
  fallbackEnabled: false,
  purchaseNote: null,
  actionButtonText: null,
  actionButtonUrl: null,
  defaultEntitlements: [],
  floating: { enabled: false, leaseSeconds: 900 },
  trial: { enabled: false, days: 14, maxDevices: 1 },
});

function productForm(csrf: string, form: FormState, action: string, submit: string): SafeHtml {
  return html`<form class="panel" method="post" action="${action}" novalidate>
${formError(form)}
${csrfInput(csrf)}
${input({ name: 'name', label: 'Name', form, required: true, attrs: html` maxlength="200"` })}
${textarea({ name: 'description', label: 'Description', form, hint: 'Shown in the purchase e-mail.', attrs: html` maxlength="5000"` })}
${input({ name: 'supportEmail', label: 'Support e-mail', type: 'email', form, hint: 'Customers reply to this address; the portal shows it. Empty: your account address.', attrs: html` maxlength="254"` })}
<fieldset><legend>Customer portal</legend>
${checkbox({ name: 'portalShow', label: 'Show this product in the customer portal', form })}
${checkbox({ name: 'portalAllowDeviceReset', label: 'Customers may reset their devices in the portal', form })}
<div class="row">
${input({ name: 'portalDeviceResetLimit', label: 'Resets allowed per license', type: 'number', form, attrs: html` min="1" max="1000"` })}
${input({ name: 'portalDeviceResetWindowDays', label: 'Within (days)', type: 'number', form, attrs: html` min="1" max="365"` })}
</div>
</fieldset>
<fieldset><legend>Expiry</legend>
${checkbox({ name: 'fallbackEnabled', label: 'Fallback: expired licenses keep working in a limited mode (status "fallbacked")', form })}
</fieldset>
<fieldset><legend>Licensing model</legend>
${input({ name: 'defaultEntitlements', label: 'Default entitlements', form, hint: 'Features a new license of this product unlocks unless given its own, e.g. "pro export.pdf": lower-case codes separated by spaces. Changing them changes no existing license.', attrs: html` autocomplete="off" spellcheck="false"` })}
${checkbox({ name: 'floatingEnabled', label: 'Floating seats: an activation holds its slot only while the app sends heartbeats (VMs, containers)', form })}
${input({ name: 'leaseSeconds', label: 'Lease length (seconds)', type: 'number', form, hint: '60 to 86,400 (a day). A device without a heartbeat for this long frees its slot for the next activation.', attrs: html` min="60" max="86400"` })}
${checkbox({ name: 'trialEnabled', label: 'Trials: apps may start a trial without a key (one per device, ever)', form })}
<div class="row">
${input({ name: 'trialDays', label: 'Trial length (days)', type: 'number', form, attrs: html` min="1" max="365"` })}
${input({ name: 'trialMaxDevices', label: 'Devices per trial', type: 'number', form, attrs: html` min="1" max="100"` })}
</div>
</fieldset>
<fieldset><legend>Purchase e-mail and portal</legend>
${textarea({ name: 'purchaseNote', label: 'Note to customers', form, hint: 'Shown in the purchase e-mail and the portal, e.g. installation steps.', attrs: html` maxlength="5000"` })}
<div class="row">
${input({ name: 'actionButtonText', label: 'Button text', form, hint: 'E.g. "Download".', attrs: html` maxlength="100"` })}
${input({ name: 'actionButtonUrl', label: 'Button link', type: 'url', form, hint: 'http(s) address; {key} is replaced by the license key.', attrs: html` maxlength="2000"` })}
</div>
</fieldset>
<div class="form-foot"><button type="submit">${submit}</button><a class="button secondary" href="${SECTION}">Cancel</a></div>
</form>`;
}

function imageCard(req: FastifyRequest, p: Product, plus: boolean): SafeHtml {
  const viewer = req.dashboard.viewer;
  if (!plus) {
    return html`<section class="card" aria-labelledby="image-title"><h2 id="image-title">Product image</h2><p class="hint">Product images, shown in purchase e-mails, need the plus plan.</p></section>`;
  }
  return html`<section class="card" aria-labelledby="image-title"><h2 id="image-title">Product image</h2>
${p.hasImage ? html`<img class="product-image" src="/api/v1/public/products/${p.id}/image" alt="Image of ${p.name}">` : html`<p class="hint">No image yet. It appears at the top of the purchase e-mail.</p>`}
<form method="post" action="${path(p)}/image" enctype="multipart/form-data">
${csrfInput(viewer.csrf)}
<div class="field"><label for="f-image">${p.hasImage ? 'Replace the image' : 'Upload an image'}</label><input id="f-image" name="image" type="file" accept="image/png,image/jpeg,image/webp" required aria-describedby="f-image-hint"><p id="f-image-hint" class="hint">PNG, JPEG or WebP, at most 1 MiB.</p></div>
<div class="form-foot"><button type="submit" class="secondary">Upload image</button></div>
</form>
${p.hasImage ? html`<div class="form-foot">${actionButton(viewer, `${path(p)}/image/delete`, 'Remove image…', 'secondary small')}</div>` : ''}
</section>`;
}

async function productPage(req: FastifyRequest, reply: FastifyReply, services: Parameters<Screen['routes']>[1]['services'], id: string, o: { status?: number; form?: FormState; notice?: Notice } = {}) {
  const { principal, account, viewer } = req.dashboard;
  const p = await services.products.get(principal, id);
  const activity = await services.activity.lastDays(principal, p.id);
  const actions = html`<a class="button secondary" href="/dashboard/licenses?product=${p.id}">Licenses</a><a class="button secondary" href="${path(p)}/tokens">License tokens</a><a class="button secondary" href="${path(p)}/offers">Offers</a>${actionButton(
    viewer,
    `${path(p)}/delete`,
    'Delete product…',
    'danger',
  )}`;
  return render(req, reply, {
    status: o.status,
    title: p.name,
    section: SECTION,
    notice: o.notice,
    content: html`${pageHead(p.name, html`Product ID <code>${p.id}</code> · created ${when(p.createdAt)}`, actions, html`<a href="${SECTION}">Products</a>`)}
<div class="grid top">
<section aria-labelledby="settings-title"><h2 id="settings-title" class="sr-only">Settings</h2>${productForm(viewer.csrf, o.form ?? emptyForm(productValues(p)), path(p), 'Save changes')}</section>
<div>${imageCard(req, p, account.plan === 'plus')}${activityChart(activity, 'Activity')}</div>
</div>`,
  });
}

export const productsScreen: Screen = {
  area: 'products',
  nav: { label: 'Products', href: SECTION },
  notices: {
    'product-created': { tone: 'ok', text: 'Product created. Next: create a license for it, or turn on license tokens.' },
    'product-saved': { tone: 'ok', text: 'Changes saved.' },
    'product-deleted': { tone: 'ok', text: 'Product deleted.' },
    'image-saved': { tone: 'ok', text: 'Image uploaded.' },
    'image-removed': { tone: 'ok', text: 'Image removed.' },
  },
  routes: async (app, { services }) => {
    app.get(SECTION, async (req, reply) => {
      const { principal } = req.dashboard;
      const products = await services.products.list(principal);
      const head = pageHead('Products', 'Everything you sell licenses for.', html`<a class="button" href="${SECTION}/new">New product</a>`);
      const content =
        products.length === 0
          ? html`${head}${emptyState('You have no products yet. Create one to start issuing license keys.', html`<a class="button" href="${SECTION}/new">Create your first product</a>`)}`
          : html`${head}${table(
              'Products',
              ['Name', 'Product ID', 'Portal', 'Created'],
              products.map(
                (p) =>
                  html`<tr><td><a href="${path(p)}">${p.name}</a></td><td><code>${p.id}</code></td><td>${p.portalShow ? 'Shown' : 'Hidden'}</td><td>${when(p.createdAt)}</td></tr>`,
              ),
            )}`;
      return render(req, reply, { title: 'Products', section: SECTION, content });
    });

    const newPage = (req: FastifyRequest, reply: FastifyReply, form: FormState, status = 200) =>
      render(req, reply, {
        status,
        title: 'New product',
        section: SECTION,
        content: html`${pageHead('New product', 'Name it now; you can change everything later.', undefined, html`<a href="${SECTION}">Products</a>`)}${productForm(req.dashboard.viewer.csrf, form, `${SECTION}/new`, 'Create product')}`,
      });

    app.get(`${SECTION}/new`, async (req, reply) => newPage(req, reply, emptyForm(NEW_PRODUCT)));

    app.post(`${SECTION}/new`, async (req, reply) => {
      const f = formOf(req);
      try {
        const product = await services.products.create(req.dashboard.principal, parseProduct(CreateProductBody, f));
        return redirectWith(reply, path(product), 'product-created');
      } catch (error) {
        const errors = fieldErrors(error, RENAME);
        if (!errors) throw error;
        return newPage(req, reply, { values: f, errors }, 400);
      }
    });

    app.get<{ Params: { id: string } }>(`${SECTION}/:id`, async (req, reply) => productPage(req, reply, services, req.params.id));

    app.post<{ Params: { id: string } }>(`${SECTION}/:id`, async (req, reply) => {
      const f = formOf(req);
      try {
        await services.products.update(req.dashboard.principal, req.params.id, parseProduct(UpdateProductBody, f));
        return redirectWith(reply, path({ id: req.params.id }), 'product-saved');
      } catch (error) {
        const errors = fieldErrors(error, RENAME);
        if (!errors) throw error;
        return productPage(req, reply, services, req.params.id, { status: 400, form: { values: f, errors } });
      }
    });

    app.post<{ Params: { id: string } }>(`${SECTION}/:id/delete`, async (req, reply) => {
      const { principal } = req.dashboard;
      const p = await services.products.get(principal, req.params.id);
      const licenses = (await services.licenses.search(principal, { productId: p.id, limit: 1 })).data.length > 0;
      const force = formOf(req).force === 'on';
      if (confirmed(req) && (!licenses || force)) {
        await services.products.delete(principal, p.id, force);
        return redirectWith(reply, SECTION, 'product-deleted');
      }
      return askFirst(req, reply, {
        section: SECTION,
        title: `Delete ${p.name}?`,
        text: licenses
          ? 'This product has licenses. Deleting it deletes every one of its licenses and their devices too: apps using them stop working. This cannot be undone.'
          : 'The product and its settings are deleted. This cannot be undone.',
        action: `${path(p)}/delete`,
        button: 'Delete product',
        cancel: path(p),
        extra: licenses
          ? html`${confirmed(req) ? html`<div class="notice bad" role="alert">Tick the box to delete the licenses too.</div>` : ''}<div class="field"><label class="check" for="f-force"><input id="f-force" name="force" type="checkbox" value="on"><span><strong>Also delete all licenses of this product</strong></span></label></div>`
          : undefined,
      });
    });

    // The upload is read before the handler (its CSRF token is checked with every form's); over 1 MiB it is a 413 page.
    app.post<{ Params: { id: string } }>(`${SECTION}/:id/image`, { config: { multipart: true } }, async (req, reply) => {
      const { principal } = req.dashboard;
      const bad = (text: string, status = 400) => productPage(req, reply, services, req.params.id, { status, notice: { tone: 'bad', text } });
      const bytes = (req.body as { image?: unknown } | undefined)?.image;
      if (!Buffer.isBuffer(bytes)) return bad('Choose an image file to upload.');
      try {
        await services.productImages.put(principal, req.params.id, bytes);
      } catch (error) {
        if (error instanceof AppError && error.code !== 'not_found' && error.statusCode < 500) {
          const text = error.code === 'invalid_request' ? 'Choose an image file to upload.' : error.message;
          return bad(text, error.statusCode);
        }
        throw error;
      }
      return redirectWith(reply, path({ id: req.params.id }), 'image-saved');
    });

    app.post<{ Params: { id: string } }>(`${SECTION}/:id/image/delete`, async (req, reply) => {
      const { principal } = req.dashboard;
      const p = await services.products.get(principal, req.params.id);
      if (!confirmed(req)) {
        return askFirst(req, reply, { section: SECTION, title: 'Remove the image?', text: `The image of ${p.name} is removed from the purchase e-mail.`, action: `${path(p)}/image/delete`, button: 'Remove image', cancel: path(p) });
      }
      await services.productImages.remove(principal, p.id);
      return redirectWith(reply, path(p), 'image-removed');
    });
  },
};
