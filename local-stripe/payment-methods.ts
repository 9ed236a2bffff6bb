import { type CardProfile, profileFromTestCard } from './cards';
import { invalidParam, invalidRequest, missingParam, noSuch } from './errors';
import { type FormObject } from './form';
import { Account, ApiRequest, getCustomer, BillingDetails, LIST_PARAMS, ListObject, PaymentMethod, StoredPaymentMethod, StoredToken, newId, newestFirst, nowSeconds, paginate } from './objects';
import { EMPTY_ADDRESS, type Metadata, allowOnly, applyMetadata, getAddress, getEmail, getNullableString, getObject, getString, requireString } from './params';
import { RAW_CARD_FIELDS, findToken, profileFromParams } from './tokens';

// Payment methods: create, retrieve, attach, detach, list.

function paymentMethodObject(id: string, profile: CardProfile, billing: Partial<BillingDetails>, metadata: Metadata) {
  const object: PaymentMethod = {
    id,
    object: 'payment_method',
    allow_redisplay: 'unspecified',
    billing_details: {
      address: billing.address ?? { ...EMPTY_ADDRESS },
      email: billing.email ?? null,
      name: billing.name ?? null,
      phone: billing.phone ?? null,
      tax_id: null,
    },
    card: {
      brand: profile.brand,
      checks: { address_line1_check: null, address_postal_code_check: null, cvc_check: profile.cvc_check },
      country: profile.country,
      display_brand: profile.brand === 'amex' ? 'american_express' : profile.brand,
      exp_month: profile.exp_month,
      exp_year: profile.exp_year,
      fingerprint: profile.fingerprint,
      funding: profile.funding,
      generated_from: null,
      last4: profile.last4,
      networks: { available: [profile.brand], preferred: null },
      regulated_status: 'unregulated',
      three_d_secure_usage: { supported: true },
      wallet: null,
    },
    created: nowSeconds(),
    customer: null,
    livemode: false,
    metadata,
    type: 'card',
  };
  return object;
}

export interface ResolvedPaymentMethod {
  stored: StoredPaymentMethod;
  /** Stores the PaymentMethod if it is a fresh copy of a magic test one; no-op otherwise. */
  commit(): void;
}

/**
 * Finds a PaymentMethod by id. Stripe's magic test ids (`pm_card_visa`,
 * `pm_card_chargeDeclined`, …) yield a fresh copy with its own `pm_` id each
 * time, as on Stripe; the copy is only stored once the caller commits.
 */
export function resolvePaymentMethod(account: Account, id: string, param?: string): ResolvedPaymentMethod {
  const existing = account.paymentMethods.get(id);
  if (existing) return { stored: existing, commit: () => {} };
  const profile = id.startsWith('pm_card_') ? profileFromTestCard(id.slice('pm_card_'.length)) : null;
  if (!profile) throw noSuch('PaymentMethod', id, param);
  const stored: StoredPaymentMethod = {
    object: paymentMethodObject(newId('pm'), profile, {}, {}),
    profile,
    consumed: false,
    magic: true,
  };
  return { stored, commit: () => void account.paymentMethods.set(stored.object.id, stored) };
}

export function alreadyAttached() {
  return invalidRequest('The payment method you provided has already been attached to a customer.', {
    param: 'payment_method',
  });
}

export function consumedPaymentMethod(id: string) {
  return invalidRequest(
    `The provided PaymentMethod ${id} was previously used with a PaymentIntent without Customer attachment, shared with a connected account without Customer attachment, or was detached from a Customer. It may not be used again. To use a PaymentMethod multiple times, you must attach it to a Customer first.`,
    { param: 'payment_method' },
  );
}

function readBillingDetails(params: FormObject): Partial<BillingDetails> {
  const raw = getObject(params, 'billing_details');
  if (!raw) return {};
  allowOnly(raw, ['address', 'email', 'name', 'phone'], 'billing_details');
  return {
    address: getAddress(raw, 'address', 'billing_details[address]') ?? undefined,
    email: getEmail(raw) ?? null,
    name: getNullableString(raw, 'name', 'billing_details[name]') ?? null,
    phone: getNullableString(raw, 'phone', 'billing_details[phone]') ?? null,
  };
}

export function createPaymentMethod(req: ApiRequest): PaymentMethod {
  const { params, account, state } = req;
  allowOnly(params, ['type', 'card', 'billing_details', 'metadata', 'allow_redisplay', 'expand']);
  const type = requireString(params, 'type');
  if (type !== 'card') {
    throw invalidParam('type', `Invalid type: the local Stripe stand-in only supports "card" (got "${type}").`);
  }
  const card = getObject(params, 'card');
  if (!card) throw missingParam('card');
  let profile: CardProfile;
  let token: StoredToken | undefined;
  if ('token' in card) {
    allowOnly(card, ['token'], 'card');
    const tokenId = requireString(card, 'token', 'card[token]');
    token = findToken(state, tokenId);
    if (!token) throw noSuch('token', tokenId, 'card[token]');
    if (token.object.used) {
      throw invalidRequest(`You cannot use a Stripe token more than once: ${tokenId}.`, {
        code: 'token_already_used',
        param: 'card[token]',
      });
    }
    profile = token.profile;
  } else {
    allowOnly(card, RAW_CARD_FIELDS, 'card');
    profile = profileFromParams(card, 'card');
  }
  const billing = readBillingDetails(params);
  const metadata = applyMetadata({}, params);
  const object = paymentMethodObject(newId('pm'), profile, billing, metadata);
  // Only stored tokens are marked used; the magic ones never run out.
  if (token && state.tokens.has(token.object.id)) token.object.used = true;
  account.paymentMethods.set(object.id, { object, profile, consumed: false, magic: false });
  return object;
}

export function retrievePaymentMethod(req: ApiRequest, id: string): PaymentMethod {
  // A magic id is answered with a transient copy (nothing stored).
  return resolvePaymentMethod(req.account, id).stored.object;
}

export function attachPaymentMethod(req: ApiRequest, id: string): PaymentMethod {
  const { params, account } = req;
  allowOnly(params, ['customer', 'expand']);
  const customerId = requireString(params, 'customer');
  getCustomer(account, customerId, 'customer');
  const pm = resolvePaymentMethod(account, id);
  const current = pm.stored.object.customer;
  if (current === customerId) return pm.stored.object;
  if (current) throw alreadyAttached();
  if (pm.stored.consumed) throw consumedPaymentMethod(pm.stored.object.id);
  pm.commit();
  pm.stored.object.customer = customerId;
  return pm.stored.object;
}

export function detachPaymentMethod(req: ApiRequest, id: string): PaymentMethod {
  const { params, account } = req;
  allowOnly(params, ['expand']);
  const stored = account.paymentMethods.get(id);
  if (!stored) throw noSuch('PaymentMethod', id);
  const customerId = stored.object.customer;
  if (!customerId) throw invalidRequest(`The payment method ${id} is not attached to a customer.`);
  stored.object.customer = null;
  stored.consumed = true;
  const customer = account.customers.get(customerId);
  if (customer && customer.invoice_settings.default_payment_method === id) {
    customer.invoice_settings.default_payment_method = null;
  }
  return stored.object;
}

export function listPaymentMethods(req: ApiRequest, customerFromPath?: string): ListObject<PaymentMethod> {
  const { params, account } = req;
  allowOnly(params, customerFromPath ? [...LIST_PARAMS, 'type'] : [...LIST_PARAMS, 'type', 'customer']);
  const customerId = customerFromPath ?? getString(params, 'customer');
  if (customerFromPath) getCustomer(account, customerFromPath);
  const type = getString(params, 'type');
  let items = newestFirst(account.paymentMethods).map((s) => s.object);
  if (customerId !== undefined) items = items.filter((pm) => pm.customer === customerId);
  if (type !== undefined) items = items.filter((pm) => pm.type === type);
  const url = customerFromPath ? `/v1/customers/${customerFromPath}/payment_methods` : '/v1/payment_methods';
  return paginate(items, params, url);
}
