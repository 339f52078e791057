import { normalizeEmail } from '../../core/email.ts';
import { AppError, invalidRequest, notFound } from '../../core/errors.ts';
import type { PurchaseSnapshot } from '../../core/events.ts';
import { randomBase62 } from '../../core/ids.ts';
import { type Principal, providerPrincipal } from '../../core/principal.ts';
import type { SecretBox } from '../../core/secret-box.ts';
import { parseTimestamp, toIsoOrNull } from '../../core/time.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';
import type { LicenseService } from '../licenses/service.ts';
import { checkEntitlements } from '../../core/entitlements.ts';
import type { ProductService } from '../products/service.ts';
import { DEFAULT_GRACE_DAYS, type SubscriptionService } from '../subscriptions/service.ts';
import type { SubscriptionRef } from '../subscriptions/types.ts';
import type { OfferService } from '../offers/service.ts';
import type { Offer } from '../offers/types.ts';
import type { Outbox } from '../outbox/outbox.ts';
import { DELETE_ENDPOINT_JOB, type DeleteEndpointPayload, isRefusedKey } from './endpoint-jobs.ts';
import type { Invoice, LineItem, PaidPurchase, PaymentProvider, ReversedPayment, Subscription, WebhookHeaders } from './provider.ts';
import type { Connection, CustomerScope, PaymentRepository, PriceMapping, Purchase, PurchasePage } from './types.ts';

export interface MappingInput {
  priceId: string;
  maxDevices: number;
  licenseType: 'perpetual' | 'timed';
  offsetDays?: number;
  fixedExpiresAt?: string;
  billing?: 'one_time' | 'subscription';
  graceDays?: number;
  /** What the licenses of this price unlock; absent: the product's default entitlements. */
  entitlements?: string[];
}

/** What a notification did (the route answers 200 for all of them). */
export type NotificationOutcome =
  | { outcome: 'fulfilled' | 'unmapped' | 'unmatched'; purchase: Purchase }
  | { outcome: 'duplicate' }
  | { outcome: 'reversed'; purchases: Purchase[] }
  | { outcome: 'subscription'; licenses: number; unmappedPrices: string[] }
  | { outcome: 'payment_failed'; licenses: number }
  | { outcome: 'ignored'; type: string; malformed?: string };

export const PURCHASE_LIMIT_DEFAULT = 50;
export const PURCHASE_LIMIT_MAX = 100;
const MAX_DEVICES = 100_000;
const DAY = 86_400_000;

const newConnectionId = (): string => `pc_${randomBase62(20)}`;
const newPurchaseId = (): string => `pur_${randomBase62(20)}`;

export const purchaseSnapshot = (p: Purchase): PurchaseSnapshot => ({
  id: p.id,
  accountId: p.accountId,
  provider: p.provider,
  sessionId: p.sessionId,
  email: p.email,
  amountTotal: p.amountTotal,
  currency: p.currency,
  status: p.status,
  kind: p.kind,
  licenseKeys: [...p.licenseKeys],
  hasInvoice: p.invoiceId !== null,
  createdAt: p.createdAt,
});

function encodeCursor(p: Purchase): string {
  return Buffer.from(JSON.stringify([p.createdAt, p.id])).toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: number; id: string } {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as [unknown, unknown];
    if (typeof createdAt === 'number' && typeof id === 'string') return { createdAt, id };
  } catch {
    // fall through
  }
  throw invalidRequest('query.cursor', 'is not a cursor this API returned');
}

type MappingRule = Pick<PriceMapping, 'licenseType' | 'offsetDays' | 'fixedExpiresAt' | 'billing' | 'graceDays'>;

/**
 * A mapping's rule checked: `timed` needs exactly one of offsetDays and fixedExpiresAt, `perpetual`
 * neither; a subscription's licenses are timed, their expiry the subscription's (graceDays, default 7).
 */
function checkMapping(input: MappingInput): MappingRule {
  const hasOffset = input.offsetDays !== undefined;
  const hasFixed = input.fixedExpiresAt !== undefined;
  if (input.billing === 'subscription') {
    if (input.licenseType !== 'timed') throw invalidRequest('licenseType', 'must be timed for a subscription: the license follows the subscription');
    if (hasOffset) throw invalidRequest('offsetDays', 'is not for subscriptions: the expiry follows the subscription');
    if (hasFixed) throw invalidRequest('fixedExpiresAt', 'is not for subscriptions: the expiry follows the subscription');
    return { billing: 'subscription', licenseType: 'timed', offsetDays: null, fixedExpiresAt: null, graceDays: input.graceDays ?? DEFAULT_GRACE_DAYS };
  }
  if (input.graceDays !== undefined) throw invalidRequest('graceDays', 'is only for subscriptions');
  const oneTime = { billing: 'one_time', graceDays: null } as const;
  if (input.licenseType === 'perpetual') {
    if (hasOffset) throw invalidRequest('offsetDays', 'is only for timed licenses');
    if (hasFixed) throw invalidRequest('fixedExpiresAt', 'is only for timed licenses');
    return { ...oneTime, licenseType: 'perpetual', offsetDays: null, fixedExpiresAt: null };
  }
  if (hasOffset === hasFixed) throw invalidRequest(hasOffset ? 'fixedExpiresAt' : 'offsetDays', 'a timed mapping needs exactly one of offsetDays and fixedExpiresAt');
  return { ...oneTime, licenseType: 'timed', offsetDays: input.offsetDays ?? null, fixedExpiresAt: hasFixed ? parseTimestamp(input.fixedExpiresAt!, 'fixedExpiresAt') : null };
}

/** A failure of the provider while fulfilling: a 500, so the provider delivers the event again. */
function retryLater(error: unknown): never {
  if (error instanceof AppError && (error.code === 'provider_unavailable' || error.code === 'invalid_provider_key')) {
    throw new AppError('internal_error', `Could not fetch the purchase from the provider (${error.message}); retry later.`);
  }
  throw error;
}

export interface PaymentServiceOptions {
  /** Notification URLs registered at providers start here (BASE_URL). */
  baseUrl: string;
  /** Failures of after-failure work (deleting an endpoint whose connection could not be stored nor queued). */
  onBackgroundError?: (error: unknown) => void;
  clock?: () => number;
  /** Development only: a provider's CLI signing secret (`stripe listen`), also accepted for test-mode connections. */
  cliSecrets?: Record<string, string>;
}

/**
 * Payments: the connection to a provider, price mappings, and the fulfilment rules, written once
 * for every provider: a paid purchase creates one license per mapped line item (through the
 * license service, with its purchase e-mail) in one unit, exactly once per session; a refund or a
 * dispute revokes them. What is provider-specific sits behind `PaymentProvider`.
 */
export class PaymentService {
  private readonly providers: Map<string, PaymentProvider>;
  private readonly baseUrl: string;
  private readonly onBackgroundError: (error: unknown) => void;
  private readonly clock: () => number;
  private readonly cliSecrets: Record<string, string>;

  constructor(
    private readonly repo: PaymentRepository,
    private readonly units: UnitRunner,
    providers: PaymentProvider[],
    private readonly products: ProductService,
    private readonly licenses: LicenseService,
    private readonly subscriptions: SubscriptionService,
    private readonly offers: OfferService,
    private readonly secrets: SecretBox,
    private readonly outbox: Outbox,
    options: PaymentServiceOptions,
  ) {
    this.providers = new Map(providers.map((p) => [p.name, p]));
    this.baseUrl = options.baseUrl;
    this.onBackgroundError = options.onBackgroundError ?? (() => {});
    this.clock = options.clock ?? Date.now;
    this.cliSecrets = options.cliSecrets ?? {};
  }

  /** The providers' notification routes: one per provider. */
  webhookRoutes(): { name: string; info: PaymentProvider['webhook'] }[] {
    return [...this.providers.values()].map((p) => ({ name: p.name, info: p.webhook }));
  }

  private provider(name: string): PaymentProvider {
    const provider = this.providers.get(name);
    if (!provider) throw notFound('Payment provider');
    return provider;
  }

  private apiKey(c: Connection): string {
    return this.secrets.open(c.apiKeySealed, c.id);
  }

  /**
   * Connects (or reconnects) the account: creates the notification endpoint at the provider with
   * the key (which checks the key), then stores both secrets sealed. A reconnect replaces the
   * connection and queues the old endpoint's deletion in the same unit (an outbox job, retried until
   * the provider confirms), so neither a provider down at that moment nor a crash after the commit
   * leaves it behind. Nothing is stored when the provider refuses.
   */
  async connect(principal: Principal, providerName: string, apiKey: string): Promise<Connection> {
    const provider = this.provider(providerName);
    const id = newConnectionId();
    const endpoint = await provider.connect(apiKey, `${this.baseUrl}/api/v1/payments/${providerName}/webhook/${id}`);
    const connection: Connection = {
      id,
      accountId: principal.accountId,
      provider: providerName,
      livemode: endpoint.livemode,
      webhookEndpointId: endpoint.endpointId,
      apiKeySealed: this.secrets.seal(apiKey, id),
      webhookSecretSealed: this.secrets.seal(endpoint.signingSecret, `${id}/webhook`),
      connectedAt: this.clock(),
    };
    try {
      await this.units.run(async (unit) => {
        const replaced = await this.repo.replaceConnection(unit, connection);
        if (replaced) await this.queueEndpointDeletion(unit, replaced);
      });
    } catch (error) {
      // The new endpoint serves no stored connection: its deletion is queued on its own (or, with the store failing too, tried now).
      await this.units.run((unit) => this.queueEndpointDeletion(unit, connection)).catch(() => provider.disconnect(apiKey, endpoint.endpointId).catch(this.onBackgroundError));
      throw error;
    }
    return connection;
  }

  private queueEndpointDeletion(unit: Unit, c: Connection): Promise<string> {
    const payload: DeleteEndpointPayload = { provider: c.provider, connectionId: c.id, endpointId: c.webhookEndpointId, apiKeySealed: c.apiKeySealed };
    return this.outbox.enqueue(unit, DELETE_ENDPOINT_JOB, payload, { accountId: c.accountId });
  }

  /**
   * The outbox job a reconnect queued: deletes the endpoint at its provider with the key that made it.
   * Done when the provider confirms (an endpoint it no longer has included) or refuses the key (revoked:
   * nothing can be deleted with it); otherwise it throws and the job is retried.
   */
  async deleteEndpoint(job: DeleteEndpointPayload): Promise<void> {
    try {
      await this.provider(job.provider).disconnect(this.secrets.open(job.apiKeySealed, job.connectionId), job.endpointId);
    } catch (error) {
      if (!isRefusedKey(error)) throw error;
    }
  }

  connection(principal: Principal, providerName: string): Promise<Connection | undefined> {
    this.provider(providerName);
    return this.repo.findConnection(principal.accountId, providerName);
  }

  /**
   * Deletes the endpoint at the provider, then forgets the keys. A key the provider refuses by now
   * (revoked) cannot delete anything there: the keys are forgotten anyway. The provider being
   * unreachable is a 502 and keeps the connection, so the operator can try again.
   */
  async disconnect(principal: Principal, providerName: string): Promise<void> {
    const provider = this.provider(providerName);
    const current = await this.repo.findConnection(principal.accountId, providerName);
    if (!current) return;
    await this.deleteEndpoint({ provider: providerName, connectionId: current.id, endpointId: current.webhookEndpointId, apiKeySealed: current.apiKeySealed });
    await this.units.run((unit) => this.repo.deleteConnection(unit, principal.accountId, current.id));
  }

  /**
   * Makes the connection's endpoint at the provider listen to every event the service handles now:
   * connections made before subscriptions existed keep their old list until then.
   */
  async refreshEndpoint(principal: Principal, providerName: string): Promise<Connection> {
    const provider = this.provider(providerName);
    const connection = await this.repo.findConnection(principal.accountId, providerName);
    if (!connection) throw new AppError('payments_not_connected', `No ${providerName} account is connected.`);
    await provider.refreshEndpoint(this.apiKey(connection), connection.webhookEndpointId);
    return connection;
  }

  async addMapping(principal: Principal, productId: string, providerName: string, input: MappingInput): Promise<PriceMapping> {
    const provider = this.provider(providerName);
    await this.products.get(principal, productId);
    const rule = checkMapping(input);
    const priceId = input.priceId.trim();
    if (!priceId) throw invalidRequest('priceId', 'must not be blank');
    const taken = await this.repo.findMapping(principal.accountId, providerName, priceId);
    if (taken) throw priceTaken(taken);
    const connection = await this.repo.findConnection(principal.accountId, providerName);
    if (!connection) throw new AppError('payments_not_connected', `Connect a ${providerName} account first: the price is checked there.`);
    if (!(await provider.priceExists(this.apiKey(connection), priceId))) throw invalidRequest('priceId', `no such price at ${providerName}`);
    const entitlements = input.entitlements === undefined ? null : checkEntitlements(input.entitlements, 'entitlements');
    const mapping: PriceMapping = { accountId: principal.accountId, provider: providerName, priceId, productId, maxDevices: input.maxDevices, ...rule, entitlements, createdAt: this.clock() };
    await this.units.run(async (unit) => {
      await this.products.get(principal, productId, unit); // still there
      if (!(await this.repo.insertMapping(unit, mapping))) throw priceTaken(undefined);
    });
    return mapping;
  }

  async listMappings(principal: Principal, productId: string): Promise<PriceMapping[]> {
    await this.products.get(principal, productId);
    return this.repo.listMappings(principal.accountId, productId);
  }

  async removeMapping(principal: Principal, productId: string, priceId: string): Promise<void> {
    const removed = await this.units.run((unit) => this.repo.deleteMapping(unit, principal.accountId, productId, priceId));
    if (!removed) throw notFound('Price mapping');
  }

  async listPurchases(principal: Principal, query: { limit?: number; cursor?: string }): Promise<PurchasePage> {
    const limit = query.limit ?? PURCHASE_LIMIT_DEFAULT;
    const data = await this.repo.listPurchases(principal.accountId, limit + 1, query.cursor ? decodeCursor(query.cursor) : undefined);
    const more = data.length > limit;
    if (more) data.pop();
    return { data, nextCursor: more ? encodeCursor(data[data.length - 1]!) : null };
  }

  /** The operator's invoice of a purchase, fetched from the provider now (its links expire). */
  async invoice(principal: Principal, purchaseId: string): Promise<Invoice> {
    const purchase = await this.repo.getPurchase(principal.accountId, purchaseId);
    if (!purchase) throw notFound('Purchase');
    return this.fetchInvoice(purchase);
  }

  /** The buyer's invoice in the portal: 404 for anyone else's purchase. */
  async customerInvoice(scope: CustomerScope, purchaseId: string): Promise<Invoice> {
    const purchase = await this.repo.findCustomerPurchase({ ...scope, email: normalizeEmail(scope.email) }, purchaseId);
    if (!purchase) throw notFound('Invoice');
    return this.fetchInvoice(purchase);
  }

  /** For the portal: which of these licenses came with an invoice the buyer may download. */
  invoicedPurchases(scope: CustomerScope, licenseKeys: string[]): Promise<Map<string, string>> {
    if (licenseKeys.length === 0) return Promise.resolve(new Map());
    return this.repo.invoicedPurchases({ ...scope, email: normalizeEmail(scope.email) }, licenseKeys);
  }

  /** For the portal: which of these licenses follow a subscription their customer can manage. */
  async managedSubscriptions(scope: CustomerScope, licenseKeys: string[]): Promise<Set<string>> {
    const links = await this.subscriptions.customerLinks({ ...scope, email: normalizeEmail(scope.email) }, licenseKeys);
    return new Set(links.filter((l) => l.customerId !== null).map((l) => l.licenseKey));
  }

  /**
   * The provider's billing portal for the subscription of the customer's license, made now (its
   * sessions are short-lived): 404 for anyone else's license or one that follows no subscription.
   */
  async billingPortal(scope: CustomerScope, licenseKey: string, returnUrl: string): Promise<string> {
    const [link] = await this.subscriptions.customerLinks({ ...scope, email: normalizeEmail(scope.email) }, [licenseKey]);
    if (!link?.customerId) throw notFound('Subscription');
    const connection = await this.repo.findConnection(link.accountId, link.provider);
    if (!connection) throw new AppError('payments_not_connected', `The ${link.provider} account is no longer connected.`);
    return this.provider(link.provider).billingPortalUrl(this.apiKey(connection), link.customerId, returnUrl);
  }

  /** For the portal: the offers each of the customer's licenses qualifies for (license key → offers). */
  async customerOffers(scope: CustomerScope, licenseKeys: string[]): Promise<Map<string, Offer[]>> {
    const found = await this.offers.customerOffers({ ...scope, email: normalizeEmail(scope.email) }, licenseKeys);
    return new Map([...found].map(([key, { offers }]) => [key, offers]));
  }

  /**
   * A Checkout session for the offer, made now for the license's customer (its e-mail, metadata
   * tessera_license_key and tessera_offer_id): its completion applies the offer. 404 unless the
   * license is the scope's own and qualifies for the offer.
   */
  async offerCheckout(scope: CustomerScope, licenseKey: string, offerId: string, portalUrl: string): Promise<string> {
    const found = (await this.offers.customerOffers({ ...scope, email: normalizeEmail(scope.email) }, [licenseKey])).get(licenseKey);
    const offer = found?.offers.find((o) => o.id === offerId);
    if (!found || !offer) throw notFound('Offer');
    const connection = await this.repo.findConnection(found.license.accountId, offer.provider);
    if (!connection) throw new AppError('payments_not_connected', `The ${offer.provider} account is no longer connected.`);
    return this.provider(offer.provider).checkoutUrl(this.apiKey(connection), {
      priceId: offer.priceId,
      email: found.license.email ?? scope.email,
      metadata: { tessera_license_key: found.license.key, tessera_offer_id: offer.id },
      successUrl: `${portalUrl}?notice=offer-paid`,
      cancelUrl: portalUrl,
    });
  }

  private async fetchInvoice(purchase: Purchase): Promise<Invoice> {
    if (!purchase.invoiceId) throw notFound('Invoice');
    const connection = await this.repo.findConnection(purchase.accountId, purchase.provider);
    if (!connection) throw new AppError('payments_not_connected', `The ${purchase.provider} account is no longer connected: its invoices cannot be fetched.`);
    const invoice = await this.provider(purchase.provider).invoice(this.apiKey(connection), purchase.invoiceId);
    if (!invoice) throw notFound('Invoice');
    return invoice;
  }

  /**
   * A provider's notification to `connectionId`: verified against that connection's signing
   * secret, then applied. Everything the provider must be asked happens before the unit opens
   * (a unit may await only its own statements); the unit then decides, under the purchase's
   * unique key, whether this delivery is the one that fulfils.
   */
  async handleNotification(providerName: string, connectionId: string, rawBody: Buffer, headers: WebhookHeaders): Promise<NotificationOutcome> {
    const provider = this.provider(providerName);
    const connection = await this.repo.findConnectionById(connectionId);
    if (!connection || connection.provider !== providerName) throw notFound('Connection');
    const secret = this.secrets.open(connection.webhookSecretSealed, `${connection.id}/webhook`);
    const notification = this.verify(provider, connection, rawBody, headers, secret);
    const principal = providerPrincipal(connection.accountId, providerName);
    switch (notification.kind) {
      case 'ignored':
        return notification.malformed === undefined ? { outcome: 'ignored', type: notification.type } : { outcome: 'ignored', type: notification.type, malformed: notification.malformed };
      case 'reversed':
        return this.reverse(principal, providerName, notification);
      case 'paid': {
        // A redelivery of a fulfilled purchase costs no call to the provider.
        if (await this.repo.findPurchaseBySession(connection.accountId, providerName, notification.sessionId)) return { outcome: 'duplicate' };
        if (notification.subscriptionId) return this.fulfilSubscription(principal, provider, connection, notification, notification.subscriptionId);
        const items = await provider.lineItems(this.apiKey(connection), notification.sessionId).catch(retryLater);
        if (items === null) return { outcome: 'ignored', type: `${providerName} order fulfilled by its subscription's event` };
        if (notification.licenseKey) return this.fulfilOffer(principal, providerName, notification, notification.licenseKey, items);
        return this.units.run((unit) => this.fulfil(unit, principal, providerName, notification, items, null));
      }
      case 'subscription': {
        const ref = { accountId: connection.accountId, provider: providerName, subscriptionId: notification.subscriptionId };
        const outcome = await this.subscriptions.follow(
          ref,
          () => provider.subscription(this.apiKey(connection), notification.subscriptionId).catch(retryLater),
          async (unit, sub, previous) => {
            const plans = await this.plansFor(unit, principal.accountId, providerName, sub?.items ?? []);
            return this.subscriptions.apply(unit, principal, ref, sub, previous, plans);
          },
          { eventId: notification.eventId },
        );
        return outcome === 'duplicate' ? { outcome } : { outcome: 'subscription', ...outcome };
      }
      case 'payment_failed': {
        const ref = { accountId: connection.accountId, provider: providerName, subscriptionId: notification.subscriptionId };
        return this.units.run(async (unit): Promise<NotificationOutcome> => {
          if (!(await this.subscriptions.recordEvent(unit, ref, notification.eventId))) return { outcome: 'duplicate' };
          return { outcome: 'payment_failed', licenses: await this.subscriptions.paymentFailed(unit, principal, ref, notification) };
        });
      }
    }
  }

  private async plansFor(unit: Unit, accountId: string, providerName: string, items: { priceId: string | null }[]): Promise<Map<string, PriceMapping>> {
    const priceIds = [...new Set(items.flatMap((i) => (i.priceId ? [i.priceId] : [])))];
    return new Map((await this.repo.mappingsFor(unit, accountId, providerName, priceIds)).map((m) => [m.priceId, m]));
  }

  /**
   * A checkout in subscription mode: the subscription's items are its line items, each mapped one
   * a license linked to the subscription, with the expiry its current state gives. It runs as any
   * event about the subscription does (SubscriptionService.follow), so it never applies a state older
   * than one an event applied meanwhile.
   */
  private async fulfilSubscription(principal: Principal, provider: PaymentProvider, connection: Connection, paid: PaidPurchase, subscriptionId: string): Promise<NotificationOutcome> {
    const ref = { accountId: connection.accountId, provider: provider.name, subscriptionId };
    const outcome = await this.subscriptions.follow(
      ref,
      () => provider.subscription(this.apiKey(connection), subscriptionId).catch(retryLater),
      (unit, sub) => {
        const items: LineItem[] = (sub?.items ?? []).map((i) => ({ id: i.id, priceId: i.priceId, quantity: i.quantity }));
        return this.fulfil(unit, principal, provider.name, paid, items, sub && { ref, sub });
      },
      { done: async () => (await this.repo.findPurchaseBySession(connection.accountId, provider.name, paid.sessionId)) !== undefined },
    );
    return outcome === 'duplicate' ? { outcome } : outcome;
  }

  /** The endpoint's own secret; for a test-mode connection also the CLI's, when the server is given one. */
  private verify(provider: PaymentProvider, connection: Connection, rawBody: Buffer, headers: WebhookHeaders, secret: string) {
    try {
      return provider.parse(rawBody, headers, secret, this.clock());
    } catch (error) {
      const cli = this.cliSecrets[provider.name];
      if (!cli || connection.livemode || !(error instanceof AppError && error.code === 'invalid_signature')) throw error;
      return provider.parse(rawBody, headers, cli, this.clock());
    }
  }

  /** One unit: the purchase and a license per mapped item (linked to the subscription, in subscription mode). */
  private async fulfil(
    unit: Unit,
    principal: Principal,
    providerName: string,
    paid: PaidPurchase,
    items: LineItem[],
    subscription: { ref: SubscriptionRef; sub: Subscription } | null,
  ): Promise<NotificationOutcome> {
    const now = this.clock();
    if (paid.paymentId) await this.repo.lockPayment(unit, principal.accountId, providerName, paid.paymentId);
    const mappings = await this.plansFor(unit, principal.accountId, providerName, items);
    // Refunded or disputed before this event got through (it was being retried): recorded as such, no license.
    const reversed = paid.paymentId ? await this.repo.earlyReversal(unit, principal.accountId, providerName, paid.paymentId) : undefined;
    // A subscription's licenses follow the subscription, refunded payment or not (reverse()).
    const mapped = reversed && !subscription ? [] : items.filter((i) => i.priceId !== null && mappings.has(i.priceId));
    const purchase = newPurchase(principal, providerName, paid, now, {
      // Any item the operator has not mapped needs their attention, even beside mapped ones.
      status: reversed ?? (mapped.length === items.length && items.length > 0 ? 'fulfilled' : 'unmapped'),
      kind: subscription ? 'subscription' : 'new',
      subscriptionId: subscription?.ref.subscriptionId ?? null,
    });
    if (!(await this.repo.insertPurchase(unit, purchase, paid.email ? normalizeEmail(paid.email) : null))) return { outcome: 'duplicate' };
    await this.createLicenses(unit, principal, purchase, mapped, mappings, subscription, now);
    await unit.emit({ type: 'purchase.completed', actor: principal.actor, occurredAt: now, purchase: purchaseSnapshot(purchase) });
    return { outcome: purchase.status === 'unmapped' ? 'unmapped' : 'fulfilled', purchase };
  }

  /**
   * A renewal or upgrade checkout (its metadata names a license): the offer of its price applies to
   * that license instead of creating one, in one unit, once per session. A key of another account,
   * or a price that is no offer of the license's product, changes nothing: the purchase is kept
   * `unmatched` for the operator.
   */
  private fulfilOffer(principal: Principal, providerName: string, paid: PaidPurchase, licenseKey: string, items: LineItem[]): Promise<NotificationOutcome> {
    const now = this.clock();
    return this.units.run(async (unit): Promise<NotificationOutcome> => {
      if (paid.paymentId) await this.repo.lockPayment(unit, principal.accountId, providerName, paid.paymentId);
      const reversed = paid.paymentId ? await this.repo.earlyReversal(unit, principal.accountId, providerName, paid.paymentId) : undefined;
      const license = await this.licenses.get(principal, licenseKey, unit).catch((error: unknown) => {
        if (error instanceof AppError && error.code === 'not_found') return undefined;
        throw error;
      });
      const priceIds = items.flatMap((i) => (i.priceId ? [i.priceId] : []));
      const offer = license && (await this.offers.find(unit, license, providerName, priceIds));
      const purchase = newPurchase(principal, providerName, paid, now, {
        status: reversed ?? (offer ? 'fulfilled' : 'unmatched'),
        kind: offer?.kind ?? 'new',
        subscriptionId: null,
      });
      if (!(await this.repo.insertPurchase(unit, purchase, paid.email ? normalizeEmail(paid.email) : null))) return { outcome: 'duplicate' };
      if (license && offer && !reversed) {
        const applied = await this.offers.apply(unit, principal, license, offer, paid.email ?? license.email);
        if (applied) {
          const item = items.find((i) => i.priceId === offer.priceId)!;
          await this.repo.addPurchaseLicense(unit, purchase.id, item.id, license.key);
          purchase.licenseKeys.push(license.key);
        } else {
          // A renewal of a license that does not expire: nothing to extend.
          await this.repo.setPurchaseStatus(unit, purchase.id, 'unmatched', now);
          purchase.status = 'unmatched';
        }
      }
      await unit.emit({ type: 'purchase.completed', actor: principal.actor, occurredAt: now, purchase: purchaseSnapshot(purchase) });
      return { outcome: purchase.status === 'fulfilled' ? 'fulfilled' : 'unmatched', purchase };
    });
  }

  /** A license per mapped item, recorded on the purchase (and linked to the subscription, in subscription mode). */
  private async createLicenses(
    unit: Unit,
    principal: Principal,
    purchase: Purchase,
    items: LineItem[],
    mappings: Map<string, PriceMapping>,
    subscription: { ref: SubscriptionRef; sub: Subscription } | null,
    now: number,
  ): Promise<void> {
    for (const item of items) {
      const mapping = mappings.get(item.priceId!)!;
      const subItem = subscription?.sub.items.find((i) => i.id === item.id);
      const expiresAt = subscription && subItem ? toIsoOrNull(this.subscriptions.expiryFor(subscription.sub, subItem, mapping)) : expiryOf(mapping, now);
      const license = await this.licenses.create(
        principal,
        {
          productId: mapping.productId,
          type: subscription ? 'timed' : mapping.licenseType,
          expiresAt,
          maxDevices: Math.min(MAX_DEVICES, mapping.maxDevices * Math.max(1, item.quantity)),
          email: purchase.email,
          // No address on the session: the license is made all the same; the operator sees it in purchases.
          sendEmail: purchase.email !== null,
          ...(mapping.entitlements === null ? {} : { entitlements: mapping.entitlements }),
        },
        unit,
      );
      await this.repo.addPurchaseLicense(unit, purchase.id, item.id, license.key);
      if (subscription && subItem) await this.subscriptions.link(unit, subscription.ref, license.key, subItem, mapping);
      purchase.licenseKeys.push(license.key);
    }
  }

  /**
   * Fulfils a purchase kept `unmapped` once its prices are mapped: the items that have no license yet
   * and whose price is mapped now each get one, in one unit with the purchase locked, so concurrent
   * calls (or a call racing a redelivered event) create each license once. A purchase fulfilled
   * already is answered as it is; a refunded, disputed or unmatched one is a 409.
   */
  async fulfilLater(principal: Principal, purchaseId: string): Promise<Purchase> {
    const found = await this.repo.getPurchase(principal.accountId, purchaseId);
    if (!found) throw notFound('Purchase');
    if (found.status === 'fulfilled') return found;
    if (found.status !== 'unmapped') throw new AppError('purchase_not_unmapped', `The purchase is ${found.status}: only an unmapped purchase can be fulfilled.`);
    const provider = this.provider(found.provider);
    const connection = await this.repo.findConnection(principal.accountId, found.provider);
    if (!connection) throw new AppError('payments_not_connected', `Connect ${found.provider} again first: the purchase's items are read there.`);
    const apply = async (unit: Unit, items: LineItem[], subscription: { ref: SubscriptionRef; sub: Subscription } | null): Promise<Purchase> => {
      const locked = await this.repo.lockPurchase(unit, principal.accountId, purchaseId);
      if (!locked) throw notFound('Purchase');
      const { purchase, fulfilledItems } = locked;
      if (purchase.status !== 'unmapped') return purchase;
      const now = this.clock();
      const mappings = await this.plansFor(unit, principal.accountId, purchase.provider, items);
      const open = items.filter((i) => !fulfilledItems.has(i.id));
      const mapped = open.filter((i) => i.priceId !== null && mappings.has(i.priceId));
      if (mapped.length === 0) throw invalidRequest('purchaseId', 'none of the purchase\'s unfulfilled prices is mapped yet: map them first');
      await this.createLicenses(unit, principal, purchase, mapped, mappings, subscription, now);
      if (mapped.length === open.length) {
        await this.repo.setPurchaseStatus(unit, purchase.id, 'fulfilled', now);
        purchase.status = 'fulfilled';
      }
      // Receivers learn the new keys the way they learnt the purchase.
      await unit.emit({ type: 'purchase.completed', actor: principal.actor, occurredAt: now, purchase: purchaseSnapshot(purchase) });
      return purchase;
    };
    if (found.subscriptionId) {
      const ref = { accountId: principal.accountId, provider: provider.name, subscriptionId: found.subscriptionId };
      const outcome = await this.subscriptions.follow(
        ref,
        () => provider.subscription(this.apiKey(connection), found.subscriptionId!),
        (unit, sub) => apply(unit, (sub?.items ?? []).map((i) => ({ id: i.id, priceId: i.priceId, quantity: i.quantity })), sub && { ref, sub }),
      );
      if (outcome === 'duplicate') throw new AppError('internal_error', 'unreachable: no event id was given');
      return outcome;
    }
    const items = (await provider.lineItems(this.apiKey(connection), found.sessionId)) ?? [];
    return this.units.run((unit) => apply(unit, items, null));
  }

  /** A full refund or a dispute: the purchase is marked so and (unless a subscription's) its licenses revoked, once. */
  private reverse(principal: Principal, providerName: string, reversed: ReversedPayment): Promise<NotificationOutcome> {
    const now = this.clock();
    return this.units.run(async (unit): Promise<NotificationOutcome> => {
      await this.repo.lockPayment(unit, principal.accountId, providerName, reversed.paymentId);
      const found = await this.repo.lockPurchasesByPayment(unit, principal.accountId, providerName, reversed.paymentId);
      if (found.length === 0) {
        // Its checkout event may still be on its way (Stripe retries a failed delivery for days).
        await this.repo.rememberReversal(unit, principal.accountId, providerName, reversed.paymentId, reversed.reason, now);
        return { outcome: 'ignored', type: `payment ${reversed.reason} before its purchase: remembered` };
      }
      const purchases = found.filter((p) => p.status === 'fulfilled' || p.status === 'unmapped');
      if (purchases.length === 0) return { outcome: 'ignored', type: `payment ${reversed.reason}: reversed already` };
      for (const purchase of purchases) {
        // A subscription's licenses follow the subscription as the provider reports it: a refund of one
        // of its payments does not end it (the vendor cancels or revokes it at the provider, and its
        // ended_at ends them), as Polar's own benefits and Stripe's subscriptions work. docs/payments.md.
        if (purchase.subscriptionId === null) for (const key of purchase.licenseKeys) await this.revoke(principal, key, unit);
        await this.repo.setPurchaseStatus(unit, purchase.id, reversed.reason, now);
        purchase.status = reversed.reason;
        await unit.emit({ type: 'purchase.refunded', actor: principal.actor, occurredAt: now, purchase: purchaseSnapshot(purchase), reason: reversed.reason });
      }
      return { outcome: 'reversed', purchases };
    });
  }

  private async revoke(principal: Principal, key: string, unit: Unit): Promise<void> {
    try {
      await this.licenses.update(principal, key, { revoked: true }, unit);
    } catch (error) {
      // The operator deleted that license meanwhile: nothing left to revoke.
      if (!(error instanceof AppError && error.code === 'not_found')) throw error;
    }
  }
}

const priceTaken = (mapping: PriceMapping | undefined): AppError =>
  new AppError('price_already_mapped', mapping ? `The price is mapped to product ${mapping.productId} already.` : 'The price is mapped to a product already.');

/** The expiry a mapping gives a license made at `now` (ISO, as the license service takes it). */
/** A purchase as a paid checkout records it; how it was fulfilled is the caller's. */
function newPurchase(principal: Principal, providerName: string, paid: PaidPurchase, now: number, outcome: Pick<Purchase, 'status' | 'kind' | 'subscriptionId'>): Purchase {
  return {
    id: newPurchaseId(),
    accountId: principal.accountId,
    provider: providerName,
    sessionId: paid.sessionId,
    paymentId: paid.paymentId,
    email: paid.email,
    amountTotal: paid.amountTotal,
    currency: paid.currency,
    ...outcome,
    invoiceId: paid.invoiceId,
    createdAt: now,
    licenseKeys: [],
  };
}

function expiryOf(m: PriceMapping, now: number): string | null {
  if (m.licenseType === 'perpetual') return null;
  return new Date(m.fixedExpiresAt ?? now + m.offsetDays! * DAY).toISOString();
}
