import { randomBytes } from 'node:crypto';
import { type CardProfile } from './cards';
import { invalidParam, noSuch } from './errors';
import { type FormObject } from './form';
import { type Address, type Metadata, getInt, getString, getStringArray } from './params';

// The objects of the local Stripe: their shapes (the subset of Stripe's fields the stand-in
// maintains), the state of each account, ids, lists and expansion.

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

export interface StoredPaymentMethod {
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

export interface StoredToken {
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
export const nowSeconds = () => Math.floor(processorNow() / 1000);

/** Deep copy for responses, so callers never hold references into the store. */
export function copy<T>(value: T): T {
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
export function paginate<T extends { id: string }>(items: T[], params: FormObject, url: string): ListObject<T> {
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
export function newestFirst<T>(map: Map<string, T>): T[] {
  return [...map.values()].reverse();
}

export const LIST_PARAMS = ['limit', 'starting_after', 'ending_before', 'expand'] as const;

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
export function expand<T>(account: Account, value: T, params: FormObject): T {
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

/** The customer with this id, or Stripe's 404 naming `param`. */
export function getCustomer(account: Account, id: string, param?: string): Customer {
  const customer = account.customers.get(id);
  if (!customer) throw noSuch('customer', id, param);
  return customer;
}
