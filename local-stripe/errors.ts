/**
 * Stripe-shaped errors. The SDK picks its error class from the HTTP status
 * (400/404 → StripeInvalidRequestError or, with type idempotency_error,
 * StripeIdempotencyError; 401 → StripeAuthenticationError; 402 →
 * StripeCardError; 429 → StripeRateLimitError; anything else →
 * StripeAPIError), so the status matters as much as the body.
 */

export type StripeErrorType = 'invalid_request_error' | 'card_error' | 'api_error' | 'idempotency_error';

export interface StripeErrorBody {
  type: StripeErrorType;
  message: string;
  code?: string;
  decline_code?: string;
  param?: string;
  doc_url?: string;
  charge?: string;
  payment_intent?: unknown;
  payment_method?: unknown;
}

export class StripeHttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: StripeErrorBody,
    /**
     * Whether a repeat with the same Idempotency-Key replays this answer.
     * Stripe only saves results once an endpoint started executing: a request
     * rejected while validating its parameters is not saved.
     */
    readonly executed = false,
  ) {
    super(body.message);
    this.name = 'StripeHttpError';
  }

  toJSON(): { error: StripeErrorBody } {
    return { error: this.body };
  }
}

const DOCS = 'https://stripe.com/docs/error-codes';

export function invalidRequest(message: string, extra: { code?: string; param?: string; status?: number } = {}) {
  const body: StripeErrorBody = { type: 'invalid_request_error', message };
  if (extra.code) {
    body.code = extra.code;
    body.doc_url = `${DOCS}/${extra.code.replace(/_/g, '-')}`;
  }
  if (extra.param) body.param = extra.param;
  return new StripeHttpError(extra.status ?? 400, body);
}

/** A referenced object does not exist: 404 when it is the URL's object, 400 when it is a parameter. */
export function noSuch(kind: string, id: string, param?: string) {
  return invalidRequest(`No such ${kind}: '${id}'`, { code: 'resource_missing', param, status: param ? 400 : 404 });
}

export function missingParam(param: string) {
  return invalidRequest(`Missing required param: ${param}.`, { code: 'parameter_missing', param });
}

export function invalidParam(param: string, message: string) {
  return invalidRequest(message, { code: 'parameter_invalid', param });
}

export function unknownParam(param: string) {
  return invalidRequest(`Received unknown parameter: ${param}`, { code: 'parameter_unknown', param });
}

export function apiError(status: number, message = 'An unknown error occurred while processing your request.') {
  return new StripeHttpError(status, { type: 'api_error', message });
}
