import type { components } from './schema.js';

/** The error types the API answers (`error.type`). */
export type ErrorType = components['schemas']['Error']['error']['type'];

/** Every error the SDK throws is a BillingError. */
export class BillingError extends Error {
  /**
   * The Idempotency-Key the call sent (every retry of it sent the same), on an error answer or a
   * lost one; null when the call sent none (a read). A POST, PUT, PATCH or DELETE whose outcome is
   * not known (a 5xx such as 502 with `charge_pending`, a timeout, a network error) may have been
   * carried out: repeat it with this key (`idempotencyKey` in the call options), and the service
   * answers with what the first one did, charging nothing twice. Without the key, a repeat is a
   * new request.
   */
  idempotency_key: string | null = null;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The fields of an error answer: `{"error": {"type", "message", "param", "request_id", ...}}`. */
export type ErrorFields = components['schemas']['Error']['error'];

/**
 * The API answered with an error. `type`, `param` and `request_id` are the API's own; extra
 * fields of some types are here too (`rejected_event_id` on 402 insufficient_balance and
 * spend_limit_exceeded,
 * `charge_pending`, `charge_id` and (for a plan charge) `account_id` on 502 processor_error,
 * `decline_code` on 402 card_declined),
 * and all of them under `error`.
 */
export class BillingApiError extends BillingError {
  /** HTTP status. */
  readonly status: number;
  /** `error.type`, or `unexpected_response` when the body was not the API's error shape (a proxy's page). */
  readonly type: ErrorType | 'unexpected_response';
  /** The field at fault (`name`, `[3].type`), or null. */
  readonly param: string | null;
  /** The Request-Id of the answer: quote it when asking for help. */
  readonly request_id: string | null;
  readonly rejected_event_id?: string;
  readonly charge_pending?: boolean;
  readonly charge_id?: string;
  readonly account_id?: string;
  readonly decline_code?: string | null;
  /** Seconds the answer asked to wait before retrying (Retry-After), if it said. */
  readonly retry_after: number | null;
  /** The whole `error` object as answered, extra fields included. */
  readonly error: ErrorFields | null;
  readonly headers: Headers;

  constructor(status: number, body: unknown, headers: Headers) {
    const error = isErrorBody(body) ? (body.error as ErrorFields) : null;
    super(error?.message ?? `The API answered ${status} without an error body.`);
    this.status = status;
    this.type = error?.type ?? 'unexpected_response';
    this.param = error?.param ?? null;
    this.request_id = error?.request_id ?? headers.get('request-id');
    this.error = error;
    this.headers = headers;
    this.retry_after = parseRetryAfter(headers.get('retry-after'));
    if (error?.rejected_event_id !== undefined) this.rejected_event_id = error.rejected_event_id;
    if (error?.charge_pending !== undefined) this.charge_pending = error.charge_pending;
    if (error?.charge_id !== undefined) this.charge_id = error.charge_id;
    if (error?.account_id !== undefined) this.account_id = error.account_id;
    if (error?.decline_code !== undefined) this.decline_code = error.decline_code;
  }
}

/** No answer came: the connection failed, or every attempt timed out. */
export class BillingConnectionError extends BillingError {}

/** The last attempt took longer than `timeoutMs`. */
export class BillingTimeoutError extends BillingConnectionError {}

/** A webhook delivery whose signature, timestamp or body does not check out. */
export class WebhookVerificationError extends BillingError {}

function isErrorBody(body: unknown): body is { error: ErrorFields } {
  if (typeof body !== 'object' || body === null) return false;
  const error = (body as { error?: unknown }).error;
  return typeof error === 'object' && error !== null && typeof (error as { type?: unknown }).type === 'string' && typeof (error as { message?: unknown }).message === 'string';
}

/** Retry-After in seconds: delta-seconds or an HTTP date. */
export function parseRetryAfter(value: string | null): number | null {
  if (value === null || value.trim() === '') return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}
