/** Every error a caller can see: type, status and message, per the error contract. */
export type ErrorType =
  | 'invalid_request'
  | 'unauthorized'
  | 'insufficient_balance'
  | 'spend_limit_exceeded'
  | 'payment_method_required'
  | 'card_declined'
  | 'not_found'
  | 'conflict'
  | 'link_expired'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'internal'
  | 'processor_error'
  | 'service_unavailable';

export const STATUS: Record<ErrorType, number> = {
  invalid_request: 400,
  unauthorized: 401,
  insufficient_balance: 402,
  spend_limit_exceeded: 402,
  payment_method_required: 402,
  card_declined: 402,
  not_found: 404,
  conflict: 409,
  link_expired: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
  processor_error: 502,
  service_unavailable: 503,
};

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly type: ErrorType,
    message: string,
    readonly param: string | null = null,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
    status: number = STATUS[type],
  ) {
    super(message);
    this.status = status;
  }
}

/**
 * The body of every error answer, `{"error": {type, message, param, request_id}}` (plus the
 * fields a type adds, such as `decline_code`): built here only, so every surface says the same.
 */
export function errorEnvelope(err: ApiError, requestId: string): { error: Record<string, unknown> } {
  return { error: { type: err.type, message: err.message, param: err.param, request_id: requestId, ...err.extra } };
}

export const notFound = (what: string, param: string | null = null) => new ApiError('not_found', `No such ${what}.`, param);
export const invalid = (message: string, param: string | null = null) => new ApiError('invalid_request', message, param);
export const conflict = (message: string, param: string | null = null) => new ApiError('conflict', message, param);
