/**
 * The /v1 resources of the local Stripe: state, object shapes and endpoint
 * logic. HTTP concerns (auth, idempotency, failure injection) live in server.ts.
 *
 * Every handler validates everything before it mutates anything, so a 400
 * leaves no half-created objects behind (as with Stripe).
 */
import { randomBytes } from 'node:crypto';
import type { FormObject } from './form';
import {
  type CardProfile,
  isCardValidationError,
  legacyBrandName,
  profileFromRawCard,
  profileFromTestCard,
} from './cards';
import { StripeHttpError, invalidParam, invalidRequest, missingParam, noSuch } from './errors';
import {
  type Address,
  EMPTY_ADDRESS,
  type Metadata,
  allowOnly,
  applyMetadata,
  getAddress,
  getBool,
  getEmail,
  getInt,
  getNullableString,
  getObject,
  getString,
  getStringArray,
  requireString,
} from './params';

// ---------------------------------------------------------------------------
// Object shapes (the subset of Stripe's fields the stand-in maintains)

export interface Customer {
  id: string;
  object: 'customer';
  address: Address | null;
  balance: number;
  created: number;
  currency: string | null;
  default_source: string | null;
  delinquent: boolean;
  description: string | null;
  discount: null;
  email: string | null;
  invoice_prefix: string;
  invoice_settings: {
    custom_fields: null;
    default_payment_method: string | null;
    footer: string | null;
    rendering_options: null;
  };
  livemode: false;
  metadata: Metadata;
  name: string | null;
  next_invoice_sequence: number;
  phone: string | null;
  preferred_locales: string[];
  shipping: null;
  tax_exempt: 'none';
  test_clock: null;
}

export interface BillingDetails {
  address: Address;
  email: string | null;
  name: string | null;
  phone: string | null;
  tax_id: string | null;
}

export interface PaymentMethod {
  id: string;
  object: 'payment_method';
  allow_redisplay: string;
  billing_details: BillingDetails;
  card: {
    brand: string;
    checks: { address_line1_check: null; address_postal_code_check: null; cvc_check: string | null };
    country: string;
    display_brand: string;
    exp_month: number;
    exp_year: number;
    fingerprint: string;
    funding: string;
    generated_from: null;
    last4: string;
    networks: { available: string[]; preferred: null };
    regulated_status: 'unregulated';
    three_d_secure_usage: { supported: boolean };
    wallet: null;
  };
  created: number;
  customer: string | null;
  livemode: false;
  metadata: Metadata;
  type: 'card';
}

interface StoredPaymentMethod {
  object: PaymentMethod;
  profile: CardProfile;
  /**
   * Stripe refuses to reuse a PaymentMethod that was charged without being
   * attached to a customer, or that was detached.
   */
  consumed: boolean;
  /** A copy of a magic test id (pm_card_visa): usable with any customer, like on Stripe. */
  magic: boolean;
}

export interface Token {
  id: string;
  object: 'token';
  card: {
    id: string;
    object: 'card';
    address_city: string | null;
    address_country: string | null;
    address_line1: string | null;
    address_line2: string | null;
    address_state: string | null;
    address_zip: string | null;
    brand: string;
    country: string;
    cvc_check: string | null;
    dynamic_last4: null;
    exp_month: number;
    exp_year: number;
    fingerprint: string;
    funding: string;
    last4: string;
    metadata: Metadata;
    name: string | null;
    tokenization_method: null;
    wallet: null;
  };
  client_ip: null;
  created: number;
  livemode: false;
  type: 'card';
  used: boolean;
}

interface StoredToken {
  object: Token;
  profile: CardProfile;
}

export interface LastPaymentError {
  type: 'card_error';
  code: string;
  decline_code: string;
  message: string;
  doc_url: string;
  charge: string;
  payment_method: PaymentMethod;
}

export type PaymentIntentStatus =
  | 'requires_payment_method'
  | 'requires_confirmation'
  | 'requires_action'
  | 'processing'
  | 'succeeded'
  | 'canceled';

export interface PaymentIntent {
  id: string;
  object: 'payment_intent';
  amount: number;
  amount_capturable: number;
  amount_received: number;
  automatic_payment_methods: { enabled: boolean; allow_redirects?: string } | null;
  canceled_at: number | null;
  cancellation_reason: string | null;
  capture_method: 'automatic';
  client_secret: string;
  confirmation_method: 'automatic';
  created: number;
  currency: string;
  customer: string | null;
  description: string | null;
  last_payment_error: LastPaymentError | null;
  latest_charge: string | null;
  livemode: false;
  metadata: Metadata;
  next_action: null;
  payment_method: string | null;
  payment_method_types: string[];
  receipt_email: string | null;
  setup_future_usage: string | null;
  statement_descriptor: string | null;
  statement_descriptor_suffix: string | null;
  status: PaymentIntentStatus;
}

export interface Charge {
  id: string;
  object: 'charge';
  amount: number;
  amount_captured: number;
  amount_refunded: number;
  balance_transaction: string | null;
  billing_details: BillingDetails;
  captured: boolean;
  created: number;
  currency: string;
  customer: string | null;
  description: string | null;
  failure_code: string | null;
  failure_message: string | null;
  livemode: false;
  metadata: Metadata;
  outcome: {
    network_status: string;
    reason: string | null;
    risk_level: string;
    seller_message: string;
    type: string;
  };
  paid: boolean;
  payment_intent: string;
  payment_method: string;
  payment_method_details: {
    type: 'card';
    card: {
      brand: string;
      country: string;
      exp_month: number;
      exp_year: number;
      fingerprint: string;
      funding: string;
      last4: string;
      network: string;
    };
  };
  receipt_email: string | null;
  refunded: boolean;
  status: 'succeeded' | 'failed';
}

// ---------------------------------------------------------------------------
// State

/** One Stripe account: the namespace of one API key (sk_test_X, pk_test_X and rk_test_X share it). */
export class Account {
  readonly customers = new Map<string, Customer>();
  readonly paymentMethods = new Map<string, StoredPaymentMethod>();
  readonly paymentIntents = new Map<string, PaymentIntent>();
  readonly charges = new Map<string, Charge>();
  /** Intents left in `processing` (see ApiRequest.processing), with the card that pays them. */
  readonly processing = new Map<string, StoredPaymentMethod>();
  /** Pages of payment intents listed, and the intents they held: what looking for a payment costs. */
  intentListPages = 0;
  intentsListed = 0;
}

export class LocalStripeState {
  readonly accounts = new Map<string, Account>();
  /** Tokens are global: any key can use a token (simpler, and harmless locally). */
  readonly tokens = new Map<string, StoredToken>();

  account(namespace: string): Account {
    let account = this.accounts.get(namespace);
    if (!account) {
      account = new Account();
      this.accounts.set(namespace, account);
    }
    return account;
  }

  reset(): void {
    this.accounts.clear();
    this.tokens.clear();
  }
}

// ---------------------------------------------------------------------------
// Helpers

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export function newId(prefix: string, length = 24): string {
  const bytes = randomBytes(length);
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i] % ALPHABET.length];
  return `${prefix}_${out}`;
}

/**
 * The processor's own clock: real time, moved ahead by POST /__control/clock so a test can pass
 * the 24-hour life of idempotency keys without waiting. Objects' `created` and the keys' ages
 * read it.
 */
export const processorClock = { offsetMs: 0 };
export const processorNow = () => Date.now() + processorClock.offsetMs;
const nowSeconds = () => Math.floor(processorNow() / 1000);

/** Deep copy for responses, so callers never hold references into the store. */
function copy<T>(value: T): T {
  return structuredClone(value);
}

export interface ApiRequest {
  method: string;
  /** Path without query string, e.g. `/v1/customers/cus_123`. */
  path: string;
  params: FormObject;
  account: Account;
  state: LocalStripeState;
  /** The request was made with a publishable key (pk_…). */
  publishable: boolean;
  /**
   * Payments confirmed by this request stop at `processing`, as when the bank answers later;
   * `completeProcessing` gives them the card's outcome.
   */
  processing?: boolean;
}

export interface ListObject<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  url: string;
}

/** Stripe-style cursor pagination over items ordered newest first. */
function paginate<T extends { id: string }>(items: T[], params: FormObject, url: string): ListObject<T> {
  const limit = getInt(params, 'limit') ?? 10;
  if (limit < 1 || limit > 100) throw invalidParam('limit', 'This value must be between 1 and 100.');
  const after = getString(params, 'starting_after');
  const before = getString(params, 'ending_before');
  let slice = items;
  if (after) {
    const i = items.findIndex((x) => x.id === after);
    if (i === -1) throw noSuch('object', after, 'starting_after');
    slice = items.slice(i + 1);
  } else if (before) {
    const i = items.findIndex((x) => x.id === before);
    if (i === -1) throw noSuch('object', before, 'ending_before');
    slice = items.slice(Math.max(0, i - limit), i);
    return { object: 'list', data: slice, has_more: i - limit > 0, url };
  }
  return { object: 'list', data: slice.slice(0, limit), has_more: slice.length > limit, url };
}

/** Newest first: Maps keep insertion order, and `created` has only one-second resolution. */
function newestFirst<T>(map: Map<string, T>): T[] {
  return [...map.values()].reverse();
}

const LIST_PARAMS = ['limit', 'starting_after', 'ending_before', 'expand'] as const;

// ---------------------------------------------------------------------------
// Expansion (`expand[]=latest_charge`, `expand[]=data.customer`, …)

function lookup(account: Account, id: string): object | undefined {
  if (id.startsWith('cus_')) return account.customers.get(id);
  if (id.startsWith('pm_')) return account.paymentMethods.get(id)?.object;
  if (id.startsWith('ch_')) return account.charges.get(id);
  if (id.startsWith('pi_')) return account.paymentIntents.get(id);
  return undefined;
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** Replaces id strings along each path by the objects they name (on a copy). */
function expand<T>(account: Account, value: T, params: FormObject): T {
  const paths = getStringArray(params, 'expand') ?? [];
  if (paths.length === 0) return value;
  const root: unknown = copy(value);
  for (const path of paths) {
    const segments = path.split('.');
    if (segments.length > 4) throw invalidParam('expand', `You cannot expand more than 4 levels of a property (${path}).`);
    const walk = (node: unknown, i: number): void => {
      if (Array.isArray(node)) {
        node.forEach((item) => walk(item, i));
        return;
      }
      if (!isRecord(node)) throw invalidParam('expand', `This property cannot be expanded (${path}).`);
      const key = segments[i];
      const current = node[key];
      const last = i === segments.length - 1;
      if (typeof current === 'string') {
        const found = lookup(account, current);
        if (!found) throw invalidParam('expand', `This property cannot be expanded (${path}).`);
        node[key] = copy(found);
      } else if (current === null) {
        return; // expanding a null reference leaves it null
      } else if (current === undefined || (last && !isRecord(current))) {
        throw invalidParam('expand', `This property cannot be expanded (${path}).`);
      }
      if (!last) walk(node[key], i + 1);
    };
    walk(root, 0);
  }
  return root as T;
}

// ---------------------------------------------------------------------------
// Customers

const CUSTOMER_FIELDS = ['name', 'email', 'description', 'phone', 'address', 'metadata', 'invoice_settings', 'expand'];

function getCustomer(account: Account, id: string, param?: string): Customer {
  const customer = account.customers.get(id);
  if (!customer) throw noSuch('customer', id, param);
  return customer;
}

function readInvoiceSettings(params: FormObject): { default_payment_method?: string | null; footer?: string | null } {
  const settings = getObject(params, 'invoice_settings');
  if (!settings) return {};
  allowOnly(settings, ['default_payment_method', 'footer'], 'invoice_settings');
  return {
    default_payment_method: getNullableString(
      settings,
      'default_payment_method',
      'invoice_settings[default_payment_method]',
    ),
    footer: getNullableString(settings, 'footer', 'invoice_settings[footer]'),
  };
}

/** invoice_settings[default_payment_method] must name a PaymentMethod attached to this customer. */
function checkDefaultPaymentMethod(account: Account, customerId: string, pmId: string, pendingAttach?: string): void {
  const param = 'invoice_settings[default_payment_method]';
  if (pmId === pendingAttach) return;
  const stored = account.paymentMethods.get(pmId);
  if (!stored) throw noSuch('PaymentMethod', pmId, param);
  if (stored.object.customer !== customerId) {
    throw invalidRequest(
      `The customer does not have a payment method with the ID ${pmId}. The payment method must be attached to the customer.`,
      { code: 'resource_missing', param },
    );
  }
}

function createCustomer(req: ApiRequest): Customer {
  const { params, account } = req;
  allowOnly(params, [...CUSTOMER_FIELDS, 'payment_method']);
  const id = newId('cus', 14);
  const settings = readInvoiceSettings(params);
  const pmId = getString(params, 'payment_method');
  const pm = pmId ? resolvePaymentMethod(account, pmId, 'payment_method') : undefined;
  if (pm && pm.stored.object.customer) throw alreadyAttached();
  if (pm?.stored.consumed) throw consumedPaymentMethod(pm.stored.object.id);
  // A magic id (pm_card_visa) attaches as a fresh copy, so the default may name either.
  const attachedId = pm?.stored.object.id;
  let defaultPm = settings.default_payment_method ?? null;
  if (defaultPm && pmId && defaultPm === pmId) defaultPm = attachedId ?? defaultPm;
  if (defaultPm) checkDefaultPaymentMethod(account, id, defaultPm, attachedId);

  const customer: Customer = {
    id,
    object: 'customer',
    address: getAddress(params, 'address') ?? null,
    balance: 0,
    created: nowSeconds(),
    currency: null,
    default_source: null,
    delinquent: false,
    description: getNullableString(params, 'description') ?? null,
    discount: null,
    email: getEmail(params) ?? null,
    invoice_prefix: id.slice(4, 12).toUpperCase(),
    invoice_settings: {
      custom_fields: null,
      default_payment_method: defaultPm,
      footer: settings.footer ?? null,
      rendering_options: null,
    },
    livemode: false,
    metadata: applyMetadata({}, params),
    name: getNullableString(params, 'name', 'name', 256) ?? null,
    next_invoice_sequence: 1,
    phone: getNullableString(params, 'phone', 'phone', 20) ?? null,
    preferred_locales: [],
    shipping: null,
    tax_exempt: 'none',
    test_clock: null,
  };
  account.customers.set(id, customer);
  if (pm) {
    pm.commit();
    pm.stored.object.customer = id;
  }
  return customer;
}

/** Deletes a customer: later calls naming it answer "No such customer". */
function deleteCustomer(req: ApiRequest, id: string): { id: string; object: 'customer'; deleted: true } {
  allowOnly(req.params, []);
  getCustomer(req.account, id);
  req.account.customers.delete(id);
  return { id, object: 'customer', deleted: true };
}

function updateCustomer(req: ApiRequest, id: string): Customer {
  const { params, account } = req;
  const customer = getCustomer(account, id);
  allowOnly(params, CUSTOMER_FIELDS);
  const settings = readInvoiceSettings(params);
  if (settings.default_payment_method) checkDefaultPaymentMethod(account, id, settings.default_payment_method);
  // Read (and so validate) everything before changing anything.
  const name = getNullableString(params, 'name', 'name', 256);
  const email = getEmail(params);
  const description = getNullableString(params, 'description');
  const phone = getNullableString(params, 'phone', 'phone', 20);
  const address = getAddress(params, 'address');
  const metadata = applyMetadata(customer.metadata, params);

  if (name !== undefined) customer.name = name;
  if (email !== undefined) customer.email = email;
  if (description !== undefined) customer.description = description;
  if (phone !== undefined) customer.phone = phone;
  if (address !== undefined) customer.address = address;
  if (settings.default_payment_method !== undefined) {
    customer.invoice_settings.default_payment_method = settings.default_payment_method;
  }
  if (settings.footer !== undefined) customer.invoice_settings.footer = settings.footer;
  customer.metadata = metadata;
  return customer;
}

function listCustomers(req: ApiRequest): ListObject<Customer> {
  const { params, account } = req;
  allowOnly(params, [...LIST_PARAMS, 'email']);
  const email = getString(params, 'email');
  let items = newestFirst(account.customers);
  if (email !== undefined) items = items.filter((c) => c.email === email);
  return paginate(items, params, '/v1/customers');
}

// ---------------------------------------------------------------------------
// Tokens

const RAW_CARD_FIELDS = ['number', 'exp_month', 'exp_year', 'cvc'] as const;
const TOKEN_CARD_FIELDS = [
  ...RAW_CARD_FIELDS,
  'name',
  'address_line1',
  'address_line2',
  'address_city',
  'address_state',
  'address_zip',
  'address_country',
  'currency',
];

/** Validates raw card params like Stripe: missing fields are 400s, bad card data is a 402 card_error. */
function profileFromParams(card: FormObject, prefix: string): CardProfile {
  const number = requireString(card, 'number', `${prefix}[number]`);
  const exp_month = requireString(card, 'exp_month', `${prefix}[exp_month]`);
  const exp_year = requireString(card, 'exp_year', `${prefix}[exp_year]`);
  const cvc = getString(card, 'cvc', `${prefix}[cvc]`);
  const profile = profileFromRawCard({ number, exp_month, exp_year, cvc });
  if (isCardValidationError(profile)) {
    throw new StripeHttpError(402, {
      type: 'card_error',
      code: profile.code,
      message: profile.message,
      param: profile.param,
      doc_url: `https://stripe.com/docs/error-codes/${profile.code.replace(/_/g, '-')}`,
    });
  }
  return profile;
}

function tokenObject(id: string, profile: CardProfile, card: FormObject = {}): Token {
  const opt = (key: string) => getNullableString(card, key, `card[${key}]`) ?? null;
  return {
    id,
    object: 'token',
    card: {
      id: newId('card'),
      object: 'card',
      address_city: opt('address_city'),
      address_country: opt('address_country'),
      address_line1: opt('address_line1'),
      address_line2: opt('address_line2'),
      address_state: opt('address_state'),
      address_zip: opt('address_zip'),
      brand: legacyBrandName(profile.brand),
      country: profile.country,
      cvc_check: profile.cvc_check === 'pass' ? 'unchecked' : null,
      dynamic_last4: null,
      exp_month: profile.exp_month,
      exp_year: profile.exp_year,
      fingerprint: profile.fingerprint,
      funding: profile.funding,
      last4: profile.last4,
      metadata: {},
      name: opt('name'),
      tokenization_method: null,
      wallet: null,
    },
    client_ip: null,
    created: nowSeconds(),
    livemode: false,
    type: 'card',
    used: false,
  };
}

/** Stored tokens, plus the magic `tok_visa`-style ones that always exist and are never used up. */
function findToken(state: LocalStripeState, id: string): StoredToken | undefined {
  const stored = state.tokens.get(id);
  if (stored) return stored;
  const profile = id.startsWith('tok_') ? profileFromTestCard(id.slice(4)) : null;
  return profile ? { object: tokenObject(id, profile), profile } : undefined;
}

function createToken(req: ApiRequest): Token {
  const { params, state } = req;
  allowOnly(params, ['card', 'expand']);
  const card = getObject(params, 'card');
  if (!card) throw missingParam('card');
  allowOnly(card, TOKEN_CARD_FIELDS, 'card');
  const profile = profileFromParams(card, 'card');
  const token = tokenObject(newId('tok'), profile, card);
  state.tokens.set(token.id, { object: token, profile });
  return token;
}

function retrieveToken(req: ApiRequest, id: string): Token {
  const token = findToken(req.state, id);
  if (!token) throw noSuch('token', id);
  return token.object;
}

// ---------------------------------------------------------------------------
// Payment methods

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

interface ResolvedPaymentMethod {
  stored: StoredPaymentMethod;
  /** Stores the PaymentMethod if it is a fresh copy of a magic test one; no-op otherwise. */
  commit(): void;
}

/**
 * Finds a PaymentMethod by id. Stripe's magic test ids (`pm_card_visa`,
 * `pm_card_chargeDeclined`, …) yield a fresh copy with its own `pm_` id each
 * time, as on Stripe; the copy is only stored once the caller commits.
 */
function resolvePaymentMethod(account: Account, id: string, param?: string): ResolvedPaymentMethod {
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

function alreadyAttached() {
  return invalidRequest('The payment method you provided has already been attached to a customer.', {
    param: 'payment_method',
  });
}

function consumedPaymentMethod(id: string) {
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

function createPaymentMethod(req: ApiRequest): PaymentMethod {
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

function retrievePaymentMethod(req: ApiRequest, id: string): PaymentMethod {
  // A magic id is answered with a transient copy (nothing stored).
  return resolvePaymentMethod(req.account, id).stored.object;
}

function attachPaymentMethod(req: ApiRequest, id: string): PaymentMethod {
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

function detachPaymentMethod(req: ApiRequest, id: string): PaymentMethod {
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

function listPaymentMethods(req: ApiRequest, customerFromPath?: string): ListObject<PaymentMethod> {
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

// ---------------------------------------------------------------------------
// Payment intents

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

function getPaymentIntent(account: Account, id: string): PaymentIntent {
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

function createPaymentIntent(req: ApiRequest): PaymentIntent {
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

function confirmPaymentIntent(req: ApiRequest, id: string): PaymentIntent {
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

function listPaymentIntents(req: ApiRequest): ListObject<PaymentIntent> {
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

function retrieveCharge(req: ApiRequest, id: string): Charge {
  const charge = req.account.charges.get(id);
  if (!charge) throw noSuch('charge', id);
  return charge;
}

// ---------------------------------------------------------------------------
// Routing

interface Route {
  method: 'GET' | 'POST' | 'DELETE';
  pattern: RegExp;
  /** Publishable keys may call this route (as with Stripe: only tokens and payment methods). */
  publishable?: boolean;
  /** A plain retrieve: the only accepted param is `expand`. */
  retrieve?: boolean;
  handler: (req: ApiRequest, ...ids: string[]) => object;
}

const ID = '([A-Za-z0-9_]+)';

const ROUTES: Route[] = [
  { method: 'POST', pattern: /^\/v1\/customers$/, handler: createCustomer },
  { method: 'GET', pattern: /^\/v1\/customers$/, handler: listCustomers },
  { method: 'GET', pattern: new RegExp(`^/v1/customers/${ID}$`), retrieve: true, handler: (r, id) => getCustomer(r.account, id) },
  { method: 'POST', pattern: new RegExp(`^/v1/customers/${ID}$`), handler: updateCustomer },
  { method: 'DELETE', pattern: new RegExp(`^/v1/customers/${ID}$`), handler: deleteCustomer },
  {
    method: 'GET',
    pattern: new RegExp(`^/v1/customers/${ID}/payment_methods$`),
    handler: (r, id) => listPaymentMethods(r, id),
  },
  { method: 'POST', pattern: /^\/v1\/tokens$/, publishable: true, handler: createToken },
  { method: 'GET', pattern: new RegExp(`^/v1/tokens/${ID}$`), retrieve: true, handler: retrieveToken },
  { method: 'POST', pattern: /^\/v1\/payment_methods$/, publishable: true, handler: createPaymentMethod },
  { method: 'GET', pattern: /^\/v1\/payment_methods$/, handler: (r) => listPaymentMethods(r) },
  { method: 'GET', pattern: new RegExp(`^/v1/payment_methods/${ID}$`), retrieve: true, handler: retrievePaymentMethod },
  { method: 'POST', pattern: new RegExp(`^/v1/payment_methods/${ID}/attach$`), handler: attachPaymentMethod },
  { method: 'POST', pattern: new RegExp(`^/v1/payment_methods/${ID}/detach$`), handler: detachPaymentMethod },
  { method: 'POST', pattern: /^\/v1\/payment_intents$/, handler: createPaymentIntent },
  { method: 'GET', pattern: /^\/v1\/payment_intents$/, handler: listPaymentIntents },
  { method: 'GET', pattern: new RegExp(`^/v1/payment_intents/${ID}$`), retrieve: true, handler: (r, id) => getPaymentIntent(r.account, id) },
  { method: 'POST', pattern: new RegExp(`^/v1/payment_intents/${ID}/confirm$`), handler: confirmPaymentIntent },
  { method: 'GET', pattern: new RegExp(`^/v1/charges/${ID}$`), retrieve: true, handler: retrieveCharge },
];

export function unrecognizedUrl(method: string, path: string): StripeHttpError {
  return invalidRequest(
    `Unrecognized request URL (${method}: ${path}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`,
    { code: 'resource_missing', status: 404 },
  );
}

/** Runs one /v1 request; throws StripeHttpError for Stripe error answers. Returns the JSON body. */
export function handleApi(req: ApiRequest): object {
  for (const route of ROUTES) {
    if (route.method !== req.method) continue;
    const m = route.pattern.exec(req.path);
    if (!m) continue;
    if (req.publishable && !route.publishable) {
      throw invalidRequest(
        'This API call cannot be made with a publishable API key. Please use a secret API key. You can find a list of your API keys at https://dashboard.stripe.com/account/apikeys.',
        { status: 401 },
      );
    }
    if (route.retrieve) allowOnly(req.params, ['expand']);
    const result = route.handler(req, ...m.slice(1));
    // Copy so later mutations of the store never leak into a sent/stored answer.
    return expand(req.account, copy(result), req.params);
  }
  throw unrecognizedUrl(req.method, req.path);
}

/** Counts for GET /__control/state. */
export function accountCounts(account: Account) {
  const byStatus: Partial<Record<PaymentIntentStatus, number>> = {};
  for (const pi of account.paymentIntents.values()) byStatus[pi.status] = (byStatus[pi.status] ?? 0) + 1;
  return {
    customers: account.customers.size,
    payment_methods: account.paymentMethods.size,
    payment_intents: account.paymentIntents.size,
    payment_intents_by_status: byStatus,
    charges: account.charges.size,
    payment_intent_list_pages: account.intentListPages,
    payment_intents_listed: account.intentsListed,
  };
}
