/**
 * The payment processor as the domain sees it: a few calls whose answers are already read.
 * The Stripe adapter (stripe.ts) is the one production implementation; tests and the charge
 * simulation put a scripted one in its place (`replaceProcessors` in processors.ts), so the domain runs against
 * any fault without HTTP.
 */

/** A card as the service keeps it (never its number). */
export type CardSummary = { id: string; brand: string; last4: string; exp_month: number; exp_year: number };

/**
 * What the processor said about a payment. `refused` is definite: the request was turned down as
 * a whole and nothing was charged. `unknown` is anything after which the payment may have been
 * made, or may still be: no answer, a lost answer, a 5xx, 409 `idempotency_key_in_use`, a 401 or
 * 403 on a key that was sent before (the processor checks the API key before its idempotency
 * cache, so a refused key hides what an earlier send did), or a payment still processing.
 */
export type PaymentOutcome =
  | { kind: 'paid'; intentId: string }
  | { kind: 'declined'; code: string; message: string; intentId: string | null }
  | { kind: 'refused'; message: string }
  | { kind: 'unknown'; intentId: string | null; why: UnknownWhy };

export type UnknownWhy = 'no_answer' | 'in_use' | 'key_refused' | 'server_error' | 'processing' | 'rate_limited' | 'key_reused';

export type PaymentRequest = {
  amount: number;
  customer: string;
  paymentMethod: string;
  description: string;
  metadata: { charge_id: string; account_id: string; reason: string };
  /** The processor's idempotency key: every send of one payment uses the same. */
  idempotencyKey: string;
  /**
   * Whether this is the first time the key is sent. Only then is a refused API key (401/403)
   * definite: on a later send the first one may have been carried out.
   */
  firstSend: boolean;
};

/** A look for a payment: found (with what became of it), not there, or the processor could not be asked. */
export type PaymentLook = PaymentOutcome | { kind: 'not_found' } | { kind: 'unanswered' };

export interface Processor {
  /** Creates and confirms an off-session card payment (or, under a used key, answers what it did). */
  createPayment(req: PaymentRequest): Promise<PaymentOutcome>;
  /** What became of a payment whose id is known. */
  retrievePayment(intentId: string): Promise<PaymentLook>;
  /**
   * Finds the payment made for our charge among the customer's, made at or after `since` (the
   * processor's list, bounded by time: a charge's payment is never older than its first send).
   */
  findPayment(args: { customer: string; chargeId: string; since: Date }): Promise<PaymentLook>;
  /** A processor customer for an account; the same one for every call with the same account id. */
  createCustomer(args: { accountId: string; name: string; email: string }): Promise<string>;
  /** The customer's default card; null without one. A customer the processor does not know is a 400 naming `processor_id`. */
  defaultCard(customer: string): Promise<CardSummary | null>;
  /** Makes a card token (or a pm_ id) the customer's default card. */
  attachCard(args: { accountId: string; customer: string; token: string }): Promise<CardSummary>;
}

/** How a card token the processor refused is said to the API's callers, before the processor's own words. */
export const TOKEN_REFUSED = 'The card token was refused by the payment processor';

/** A decline in the card holder's words. */
export function plainDecline(code: string | undefined | null): string {
  switch (code) {
    case 'insufficient_funds':
      return 'The card was declined: it has insufficient funds.';
    case 'expired_card':
      return 'The card was declined: it has expired.';
    case 'incorrect_cvc':
      return 'The card was declined: the security code (CVC) is incorrect.';
    case 'incorrect_number':
      return 'The card number is incorrect.';
    case 'lost_card':
    case 'stolen_card':
      return 'The card was declined. Please use another card.';
    default:
      return 'The card was declined by the bank. Please use another card or contact the bank.';
  }
}
