import { type CardProfile, isCardValidationError, legacyBrandName, profileFromRawCard, profileFromTestCard } from './cards';
import { StripeHttpError, missingParam, noSuch } from './errors';
import { type FormObject } from './form';
import { ApiRequest, LocalStripeState, StoredToken, Token, newId, nowSeconds } from './objects';
import { allowOnly, getNullableString, getObject, getString, requireString } from './params';

// Card tokens: create and retrieve.

export const RAW_CARD_FIELDS = ['number', 'exp_month', 'exp_year', 'cvc'] as const;
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
export function profileFromParams(card: FormObject, prefix: string): CardProfile {
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
export function findToken(state: LocalStripeState, id: string): StoredToken | undefined {
  const stored = state.tokens.get(id);
  if (stored) return stored;
  const profile = id.startsWith('tok_') ? profileFromTestCard(id.slice(4)) : null;
  return profile ? { object: tokenObject(id, profile), profile } : undefined;
}

export function createToken(req: ApiRequest): Token {
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

export function retrieveToken(req: ApiRequest, id: string): Token {
  const token = findToken(req.state, id);
  if (!token) throw noSuch('token', id);
  return token.object;
}
