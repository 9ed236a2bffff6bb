import { StripeHttpError, invalidParam, invalidRequest, missingParam, noSuch } from './errors';
import { type FormObject } from './form';
import { Account, ApiRequest, getCustomer, Charge, LIST_PARAMS, ListObject, LocalStripeState, PaymentIntent, StoredPaymentMethod, copy, newId, newestFirst, nowSeconds, paginate } from './objects';
import { allowOnly, applyMetadata, getBool, getEmail, getInt, getNullableString, getObject, getString, getStringArray, requireString } from './params';
import { ResolvedPaymentMethod, consumedPaymentMethod, resolvePaymentMethod } from './payment-methods';

// Payment intents (create, confirm, list, retrieve, the processing ones completed later) and the charges they make.

const CONFIRM_FIELDS = [
  'payment_method',
  'off_session',
  'return_url',
  'receipt_email',
  'setup_future_usage',
  'error_on_requires_action',
  'expand',
];

const CREATE_PI_FIELDS = [
  ...CONFIRM_FIELDS,
  'amount',
  'currency',
  'customer',
  'confirm',
  'description',
  'metadata',
  'statement_descriptor',
  'statement_descriptor_suffix',
  'payment_method_types',
  'automatic_payment_methods',
  'capture_method',
];

export function getPaymentIntent(account: Account, id: string): PaymentIntent {
  const pi = account.paymentIntents.get(id);
  if (!pi) throw noSuch('payment_intent', id);
  return pi;
}

/** `off_session` is a boolean or `one_off`/`recurring`. */
function readOffSession(params: FormObject): boolean | undefined {
  const v = getString(params, 'off_session');
  if (v === undefined) return undefined;
  if (v === 'one_off' || v === 'recurring') return true;
  return getBool(params, 'off_session');
}

function readSetupFutureUsage(params: FormObject): string | null | undefined {
  const v = getNullableString(params, 'setup_future_usage');
  if (v && v !== 'on_session' && v !== 'off_session') {
    throw invalidParam('setup_future_usage', `Invalid setup_future_usage: must be one of on_session, off_session`);
  }
  return v;
}

/**
 * Checks that the payment method can pay for this intent, as Stripe does:
 * a PaymentMethod attached to a customer can only be used with that customer.
 * Stricter than Stripe on purpose: when the intent has a customer, the
 * PaymentMethod must be attached to it (unattached PMs are only allowed
 * for intents without a customer, and magic test ids are always allowed).
 */
function checkUsable(pm: ResolvedPaymentMethod, customerId: string | null): void {
  const { object, consumed, magic } = pm.stored;
  if (consumed) throw consumedPaymentMethod(object.id);
  if (object.customer && object.customer !== customerId) {
    throw invalidRequest(
      customerId
        ? `The provided PaymentMethod belongs to a different Customer than the one on this PaymentIntent (${customerId}).`
        : `The provided PaymentMethod was previously attached to a Customer. To use a PaymentMethod that has been attached to a Customer, you must also provide the ID of that Customer as the customer parameter.`,
      { param: 'payment_method' },
    );
  }
  if (!object.customer && customerId && !magic) {
    throw invalidRequest(
      `The PaymentMethod ${object.id} is not attached to customer ${customerId}. Attach it to the customer before charging it off-session.`,
      { param: 'payment_method' },
    );
  }
}

function chargeFor(pi: PaymentIntent, pm: StoredPaymentMethod): Charge {
  const { profile, object } = pm;
  const decline = profile.decline;
  return {
    id: newId('ch'),
    object: 'charge',
    amount: pi.amount,
    amount_captured: decline ? 0 : pi.amount,
    amount_refunded: 0,
    balance_transaction: decline ? null : newId('txn'),
    billing_details: copy(object.billing_details),
    captured: !decline,
    created: nowSeconds(),
    currency: pi.currency,
    customer: pi.customer,
    description: pi.description,
    failure_code: decline?.code ?? null,
    failure_message: decline?.message ?? null,
    livemode: false,
    metadata: { ...pi.metadata },
    outcome: decline
      ? {
          network_status: 'declined_by_network',
          reason: decline.decline_code,
          risk_level: 'normal',
          seller_message: 'The bank did not return any further details with this decline.',
          type: 'issuer_declined',
        }
      : {
          network_status: 'approved_by_network',
          reason: null,
          risk_level: 'normal',
          seller_message: 'Payment complete.',
          type: 'authorized',
        },
    paid: !decline,
    payment_intent: pi.id,
    payment_method: object.id,
    payment_method_details: {
      type: 'card',
      card: {
        brand: profile.brand,
        country: profile.country,
        exp_month: profile.exp_month,
        exp_year: profile.exp_year,
        fingerprint: profile.fingerprint,
        funding: profile.funding,
        last4: profile.last4,
        network: profile.brand,
      },
    },
    receipt_email: pi.receipt_email,
    refunded: false,
    status: decline ? 'failed' : 'succeeded',
  };
}

/**
 * Attempts the payment. On a decline the intent goes back to
 * requires_payment_method and a 402 card_error carrying the intent is thrown,
 * exactly like Stripe; the failed attempt is part of the saved idempotent result.
 */
function attemptPayment(account: Account, pi: PaymentIntent, pm: StoredPaymentMethod, processing = false): void {
  if (processing) {
    pi.status = 'processing';
    pi.payment_method = pm.object.id;
    account.processing.set(pi.id, pm);
    return;
  }
  const charge = chargeFor(pi, pm);
  account.charges.set(charge.id, charge);
  pi.latest_charge = charge.id;
  const attached = pm.object.customer !== null;
  const decline = pm.profile.decline;
  if (!decline) {
    pi.status = 'succeeded';
    pi.amount_received = pi.amount;
    pi.payment_method = pm.object.id;
    pi.last_payment_error = null;
    // setup_future_usage saves the card to the intent's customer, as on Stripe.
    if (!attached && pi.customer && pi.setup_future_usage) pm.object.customer = pi.customer;
    else if (!attached) pm.consumed = true;
    return;
  }
  if (!attached) pm.consumed = true;
  pi.status = 'requires_payment_method';
  pi.payment_method = null;
  pi.last_payment_error = {
    type: 'card_error',
    code: decline.code,
    decline_code: decline.decline_code,
    message: decline.message,
    doc_url: `https://stripe.com/docs/error-codes/${decline.code.replace(/_/g, '-')}`,
    charge: charge.id,
    payment_method: copy(pm.object),
  };
  throw new StripeHttpError(
    402,
    {
      type: 'card_error',
      code: decline.code,
      decline_code: decline.decline_code,
      message: decline.message,
      doc_url: pi.last_payment_error.doc_url,
      charge: charge.id,
      payment_intent: copy(pi),
      payment_method: copy(pm.object),
    },
    true,
  );
}

/** Validates the confirm-time params and picks the payment method (without mutating). */
function prepareConfirm(
  account: Account,
  params: FormObject,
  customerId: string | null,
  currentPm: string | null,
): ResolvedPaymentMethod {
  const pmId = getString(params, 'payment_method') ?? currentPm;
  if (!pmId) {
    // Stripe does not fall back to invoice_settings.default_payment_method for
    // PaymentIntents (only to the legacy customer.default_source): pass it explicitly.
    throw invalidRequest(
      `You cannot confirm this PaymentIntent because it's missing a payment method. To confirm the PaymentIntent${customerId ? ` with ${customerId}` : ''}, specify a payment method attached to this customer along with the customer ID.`,
      { code: 'parameter_missing', param: 'payment_method' },
    );
  }
  const pm = resolvePaymentMethod(account, pmId, 'payment_method');
  checkUsable(pm, customerId);
  return pm;
}

export function createPaymentIntent(req: ApiRequest): PaymentIntent {
  const { params, account } = req;
  allowOnly(params, CREATE_PI_FIELDS);
  const amount = getInt(params, 'amount');
  if (amount === undefined) throw missingParam('amount');
  if (amount < 1) throw invalidParam('amount', 'This value must be greater than or equal to 1.');
  // Stripe's smallest charge in USD.
  if (amount < 50) throw invalidRequest('Amount must be at least $0.50 usd', { code: 'amount_too_small', param: 'amount' });
  if (amount > 99_999_999) throw invalidRequest('Amount must be no more than $999,999.99', { code: 'amount_too_large', param: 'amount' });
  const currency = requireString(params, 'currency').toLowerCase();
  if (currency !== 'usd') {
    throw invalidParam('currency', `Invalid currency: ${currency}. The local Stripe stand-in only supports usd.`);
  }
  const customerId = getString(params, 'customer') || null;
  if (customerId) getCustomer(account, customerId, 'customer');
  const confirm = getBool(params, 'confirm') ?? false;
  const offSession = readOffSession(params);
  if (offSession !== undefined && !confirm) {
    throw invalidParam('off_session', 'You can only pass off_session when confirm=true.');
  }
  const captureMethod = getString(params, 'capture_method');
  if (captureMethod !== undefined && captureMethod !== 'automatic' && captureMethod !== 'automatic_async') {
    throw invalidParam('capture_method', 'The local Stripe stand-in only supports capture_method=automatic.');
  }
  const apm = getObject(params, 'automatic_payment_methods');
  if (apm) allowOnly(apm, ['enabled', 'allow_redirects'], 'automatic_payment_methods');
  const pmTypes = getStringArray(params, 'payment_method_types');
  const setupFutureUsage = readSetupFutureUsage(params) ?? null;
  const receiptEmail = getEmail(params, 'receipt_email') ?? null;
  const description = getNullableString(params, 'description') ?? null;
  const statementDescriptor = getNullableString(params, 'statement_descriptor', 'statement_descriptor', 22) ?? null;
  const suffix = getNullableString(params, 'statement_descriptor_suffix', 'statement_descriptor_suffix', 22) ?? null;
  const metadata = applyMetadata({}, params);
  const returnUrl = getNullableString(params, 'return_url');
  getBool(params, 'error_on_requires_action');

  // Resolve (and validate) the payment method before anything is stored.
  const explicitPm = getString(params, 'payment_method') || null;
  let pm: ResolvedPaymentMethod | null = null;
  if (confirm) {
    pm = prepareConfirm(account, params, customerId, null);
  } else if (explicitPm) {
    pm = resolvePaymentMethod(account, explicitPm, 'payment_method');
    checkUsable(pm, customerId);
  }
  let automaticPaymentMethods: PaymentIntent['automatic_payment_methods'] = pmTypes ? null : { enabled: true };
  if (apm) {
    const enabled = getBool(apm, 'enabled', 'automatic_payment_methods[enabled]') ?? false;
    const allowRedirects = getString(apm, 'allow_redirects', 'automatic_payment_methods[allow_redirects]');
    automaticPaymentMethods = allowRedirects ? { enabled, allow_redirects: allowRedirects } : { enabled };
  }
  if (confirm) requireReturnUrl(automaticPaymentMethods, returnUrl);

  const id = newId('pi');
  const pi: PaymentIntent = {
    id,
    object: 'payment_intent',
    amount,
    amount_capturable: 0,
    amount_received: 0,
    automatic_payment_methods: automaticPaymentMethods,
    canceled_at: null,
    cancellation_reason: null,
    capture_method: 'automatic',
    client_secret: `${id}_secret_${newId('x', 25).slice(2)}`,
    confirmation_method: 'automatic',
    created: nowSeconds(),
    currency,
    customer: customerId,
    description,
    last_payment_error: null,
    latest_charge: null,
    livemode: false,
    metadata,
    next_action: null,
    payment_method: pm?.stored.object.id ?? null,
    payment_method_types: pmTypes && pmTypes.length > 0 ? pmTypes : ['card'],
    receipt_email: receiptEmail,
    setup_future_usage: setupFutureUsage,
    statement_descriptor: statementDescriptor,
    statement_descriptor_suffix: suffix,
    status: pm ? 'requires_confirmation' : 'requires_payment_method',
  };
  pm?.commit();
  account.paymentIntents.set(id, pi);
  if (confirm && pm) attemptPayment(account, pi, pm.stored, req.processing);
  return pi;
}

/**
 * As Stripe: an intent that takes the payment methods enabled in the Dashboard (automatic payment
 * methods, the default without `payment_method_types`) may need a redirect, so confirming it needs
 * a `return_url` unless redirects are turned off.
 */
function requireReturnUrl(apm: PaymentIntent['automatic_payment_methods'], returnUrl: string | null | undefined): void {
  if (!apm?.enabled || apm.allow_redirects === 'never' || returnUrl) return;
  throw invalidRequest(
    'A `return_url` must be specified because this Payment Intent is configured to automatically accept the payment methods enabled in the Dashboard, some of which may require a full page redirect to succeed. If you do not want to accept redirect-based payment methods, set `automatic_payment_methods[enabled]` to `true` and `automatic_payment_methods[allow_redirects]` to `never` when creating Setup Intents and Payment Intents.',
  );
}

export function confirmPaymentIntent(req: ApiRequest, id: string): PaymentIntent {
  const { params, account } = req;
  const pi = getPaymentIntent(account, id);
  allowOnly(params, CONFIRM_FIELDS);
  if (pi.status === 'succeeded' || pi.status === 'canceled' || pi.status === 'processing') {
    const reason =
      pi.status === 'succeeded' ? 'it has already succeeded after being previously confirmed' : pi.status === 'canceled' ? 'it has been canceled' : 'it has a status of processing';
    throw invalidRequest(`You cannot confirm this PaymentIntent because ${reason}.`, {
      code: 'payment_intent_unexpected_state',
    });
  }
  readOffSession(params);
  const setupFutureUsage = readSetupFutureUsage(params);
  const receiptEmail = getEmail(params, 'receipt_email');
  requireReturnUrl(pi.automatic_payment_methods, getNullableString(params, 'return_url'));
  getBool(params, 'error_on_requires_action');
  const pm = prepareConfirm(account, params, pi.customer, pi.payment_method);
  pm.commit();
  if (setupFutureUsage !== undefined) pi.setup_future_usage = setupFutureUsage;
  if (receiptEmail !== undefined) pi.receipt_email = receiptEmail;
  pi.payment_method = pm.stored.object.id;
  attemptPayment(account, pi, pm.stored, req.processing);
  return pi;
}

/**
 * Gives a `processing` intent its card's outcome (succeeded, or requires_payment_method with
 * the decline in last_payment_error). Returns the intent, or null when no such intent is processing.
 */
export function completeProcessing(state: LocalStripeState, id: string): PaymentIntent | null {
  for (const account of state.accounts.values()) {
    const pm = account.processing.get(id);
    const pi = account.paymentIntents.get(id);
    if (!pm || !pi) continue;
    account.processing.delete(id);
    try {
      attemptPayment(account, pi, pm);
    } catch (err) {
      if (!(err instanceof StripeHttpError)) throw err;
    }
    return copy(pi);
  }
  return null;
}

export function listPaymentIntents(req: ApiRequest): ListObject<PaymentIntent> {
  const { params, account } = req;
  allowOnly(params, [...LIST_PARAMS, 'customer', 'created']);
  const customerId = getString(params, 'customer');
  let items = newestFirst(account.paymentIntents);
  if (customerId !== undefined) items = items.filter((pi) => pi.customer === customerId);
  const created = createdFilter(params);
  if (created) items = items.filter((pi) => created(pi.created));
  const page = paginate(items, params, '/v1/payment_intents');
  account.intentListPages += 1;
  account.intentsListed += page.data.length;
  return page;
}

/** `created=<ts>` or `created[gt|gte|lt|lte]=<ts>` (unix seconds), as Stripe's lists take it. */
function createdFilter(params: FormObject): ((created: number) => boolean) | null {
  const raw = params.created;
  if (raw === undefined) return null;
  if (typeof raw === 'string') {
    const at = getInt(params, 'created')!;
    return (c) => c === at;
  }
  const bounds = getObject(params, 'created')!;
  allowOnly(bounds, ['gt', 'gte', 'lt', 'lte'], 'created');
  const gt = getInt(bounds, 'gt', 'created[gt]');
  const gte = getInt(bounds, 'gte', 'created[gte]');
  const lt = getInt(bounds, 'lt', 'created[lt]');
  const lte = getInt(bounds, 'lte', 'created[lte]');
  return (c) => (gt === undefined || c > gt) && (gte === undefined || c >= gte) && (lt === undefined || c < lt) && (lte === undefined || c <= lte);
}

export function retrieveCharge(req: ApiRequest, id: string): Charge {
  const charge = req.account.charges.get(id);
  if (!charge) throw noSuch('charge', id);
  return charge;
}
