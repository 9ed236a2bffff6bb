/**
 * Card knowledge of the local Stripe: Luhn, brands, and Stripe's documented
 * test numbers with the outcome a charge on them has.
 * https://docs.stripe.com/testing#cards
 */
import { createHash } from 'node:crypto';

export type CardBrand = 'visa' | 'mastercard' | 'amex' | 'unknown';
export type CardFunding = 'credit' | 'debit' | 'prepaid' | 'unknown';

/** What happens when a card is charged. `null` means the charge succeeds. */
export interface Decline {
  code: string;
  decline_code: string;
  message: string;
}

/** Everything the server keeps about a card. The full number is never exposed. */
export interface CardProfile {
  brand: CardBrand;
  last4: string;
  exp_month: number;
  exp_year: number;
  funding: CardFunding;
  country: string;
  fingerprint: string;
  cvc_check: 'pass' | 'unchecked' | null;
  decline: Decline | null;
}

const GENERIC_DECLINE: Decline = {
  code: 'card_declined',
  decline_code: 'generic_decline',
  message: 'Your card was declined.',
};

/** Charge outcomes of Stripe's test numbers that do not simply succeed. */
const DECLINES: Record<string, Decline> = {
  '4000000000000002': GENERIC_DECLINE,
  // "Attaching this card to a Customer object succeeds, but attempts to charge the customer fail."
  '4000000000000341': GENERIC_DECLINE,
  '4000000000009995': {
    code: 'card_declined',
    decline_code: 'insufficient_funds',
    message: 'Your card has insufficient funds.',
  },
  '4000000000009987': { code: 'card_declined', decline_code: 'lost_card', message: 'Your card was declined.' },
  '4000000000009979': { code: 'card_declined', decline_code: 'stolen_card', message: 'Your card was declined.' },
  '4000000000000069': { code: 'expired_card', decline_code: 'expired_card', message: 'Your card has expired.' },
  '4000000000000127': {
    code: 'incorrect_cvc',
    decline_code: 'incorrect_cvc',
    message: "Your card's security code is incorrect.",
  },
  '4000000000000119': {
    code: 'processing_error',
    decline_code: 'processing_error',
    message: 'An error occurred while processing your card. Try again in a little bit.',
  },
};

const DEBIT_NUMBERS = new Set(['4000056655665556', '5200828282828210']);

/**
 * Stripe's "magic" test card names. `tok_<name>` and `pm_card_<name>` exist in
 * every test account without being created.
 */
export const TEST_CARDS: Record<string, string> = {
  visa: '4242424242424242',
  visa_debit: '4000056655665556',
  mastercard: '5555555555554444',
  mastercard_debit: '5200828282828210',
  amex: '378282246310005',
  chargeDeclined: '4000000000000002',
  chargeDeclinedInsufficientFunds: '4000000000009995',
  chargeDeclinedLostCard: '4000000000009987',
  chargeDeclinedStolenCard: '4000000000009979',
  chargeDeclinedExpiredCard: '4000000000000069',
  chargeDeclinedIncorrectCvc: '4000000000000127',
  chargeDeclinedProcessingError: '4000000000000119',
  chargeCustomerFail: '4000000000000341',
};

export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

export function brandOf(digits: string): CardBrand {
  if (digits.startsWith('4')) return 'visa';
  if (digits.startsWith('34') || digits.startsWith('37')) return 'amex';
  const two = Number(digits.slice(0, 2));
  const four = Number(digits.slice(0, 4));
  if ((two >= 51 && two <= 55) || (four >= 2221 && four <= 2720)) return 'mastercard';
  return 'unknown';
}

/** Brand as spelled on Token/Card objects (PaymentMethods use the lowercase code). */
export function legacyBrandName(brand: CardBrand): string {
  switch (brand) {
    case 'visa':
      return 'Visa';
    case 'mastercard':
      return 'MasterCard';
    case 'amex':
      return 'American Express';
    default:
      return 'Unknown';
  }
}

/** Stable per card number, like Stripe's fingerprints. */
function fingerprintOf(digits: string): string {
  return createHash('sha256').update(`local-stripe:${digits}`).digest('base64url').slice(0, 16);
}

/** A card error raised during tokenization (answered as HTTP 402 card_error). */
export interface CardValidationError {
  code: string;
  message: string;
  param: string;
}

export interface RawCard {
  number: string;
  exp_month: string | undefined;
  exp_year: string | undefined;
  cvc: string | undefined;
}

/** Validates raw card details as Stripe does when tokenizing; returns the profile or an error. */
export function profileFromRawCard(card: RawCard, now = new Date()): CardProfile | CardValidationError {
  const digits = card.number.replace(/[\s-]/g, '');
  if (!/^\d{12,19}$/.test(digits)) {
    return { code: 'invalid_number', message: 'Your card number is not a valid credit card number.', param: 'number' };
  }
  if (!luhnValid(digits)) {
    return { code: 'incorrect_number', message: 'Your card number is incorrect.', param: 'number' };
  }
  const month = card.exp_month !== undefined && /^\d{1,2}$/.test(card.exp_month) ? Number(card.exp_month) : NaN;
  if (!(month >= 1 && month <= 12)) {
    return { code: 'invalid_expiry_month', message: "Your card's expiration month is invalid.", param: 'exp_month' };
  }
  let year = card.exp_year !== undefined && /^\d{2}(\d{2})?$/.test(card.exp_year) ? Number(card.exp_year) : NaN;
  if (year < 100) year += 2000; // Stripe accepts two-digit years
  const thisYear = now.getUTCFullYear();
  const thisMonth = now.getUTCMonth() + 1;
  if (!Number.isFinite(year) || year > thisYear + 50 || year < thisYear || (year === thisYear && month < thisMonth)) {
    return { code: 'invalid_expiry_year', message: "Your card's expiration year is invalid.", param: 'exp_year' };
  }
  const brand = brandOf(digits);
  if (card.cvc !== undefined && card.cvc !== '') {
    const cvcLength = brand === 'amex' ? 4 : 3;
    if (!new RegExp(`^\\d{${cvcLength}}$`).test(card.cvc)) {
      return { code: 'invalid_cvc', message: "Your card's security code is invalid.", param: 'cvc' };
    }
  }
  return {
    brand,
    last4: digits.slice(-4),
    exp_month: month,
    exp_year: year,
    funding: DEBIT_NUMBERS.has(digits) ? 'debit' : 'credit',
    country: 'US',
    fingerprint: fingerprintOf(digits),
    cvc_check: card.cvc ? 'pass' : null,
    decline: DECLINES[digits] ?? null,
  };
}

/** Profile of a magic test card (`tok_visa`, `pm_card_chargeDeclined`, …), or null if unknown. */
export function profileFromTestCard(name: string, now = new Date()): CardProfile | null {
  const number = Object.prototype.hasOwnProperty.call(TEST_CARDS, name) ? TEST_CARDS[name] : undefined;
  if (!number) return null;
  const profile = profileFromRawCard(
    { number, exp_month: String(now.getUTCMonth() + 1), exp_year: String(now.getUTCFullYear() + 1), cvc: undefined },
    now,
  );
  if ('code' in profile) throw new Error(`test card ${name} is invalid: ${profile.message}`);
  return { ...profile, cvc_check: 'unchecked' };
}

export function isCardValidationError(x: CardProfile | CardValidationError): x is CardValidationError {
  return 'code' in x;
}
