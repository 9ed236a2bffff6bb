/**
 * Errors that mean "the database cannot be reached or cannot take writes right now", as opposed
 * to a fault in a statement: the primary died or is being switched over, a connection broke, no
 * listed host takes writes, PostgreSQL is starting or shutting down. A request that meets one
 * answers 503 `service_unavailable` with `Retry-After` (lib/api/route.ts): what it did is either
 * wholly committed or not at all, and a retry with the same Idempotency-Key applies it once.
 */

/** No host of a URL fits what the connection needs (lib/db/hosts.ts); the message names every host tried and why. */
export class DatabaseUnavailableError extends Error {
  constructor(
    message: string,
    readonly code = 'DATABASE_UNAVAILABLE',
  ) {
    super(message);
    this.name = 'DatabaseUnavailableError';
  }
}

/** postgres.js' own connection errors, and the socket errors Node.js gives. */
const CONNECTION_CODES = new Set([
  'DATABASE_UNAVAILABLE',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs of a server that is going away, coming up, or is not the primary any more:
 * connection exceptions (class 08), admin_shutdown, crash_shutdown, cannot_connect_now,
 * too_many_connections, read_only_sql_transaction (a write reached a standby: a former primary
 * demoted under a connection kept open), and a standby's recovery conflict.
 */
const SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '25006']);

function unavailableHere(e: { code?: unknown; message?: unknown }): boolean {
  const code = typeof e.code === 'string' ? e.code : '';
  if (CONNECTION_CODES.has(code)) return true;
  if (/^08[0-9A-Z]{3}$/.test(code)) return true;
  if (SQLSTATES.has(code)) return true;
  // A conflict with recovery on a standby (a long read cancelled by replay) is 40001 too; only
  // that one, told by its message, is the database's state rather than the transaction's.
  return code === '40001' && typeof e.message === 'string' && /conflict with recovery/.test(e.message);
}

/** The error of the chain (drizzle wraps the driver's) that says the database is unavailable, if any. */
function unavailableCause(err: unknown): { code?: unknown; message?: unknown } | null {
  let e: unknown = err;
  for (let i = 0; i < 5 && e && typeof e === 'object'; i++) {
    if (e instanceof DatabaseUnavailableError || unavailableHere(e as { code?: unknown })) return e as { code?: unknown; message?: unknown };
    e = (e as { cause?: unknown }).cause;
  }
  return null;
}

/** True when an error (or one it wraps) says the database is unavailable. */
export function isDatabaseUnavailable(err: unknown): boolean {
  return unavailableCause(err) !== null;
}

/**
 * `CODE: message` of the driver's or socket's own error, for a log line: never the wrapping
 * error's text, which carries the statement and its parameters.
 */
export function unavailableReason(err: unknown): string {
  const e = unavailableCause(err) ?? {};
  const code = typeof e.code === 'string' ? e.code : 'unknown';
  return typeof e.message === 'string' ? `${code}: ${e.message.slice(0, 300)}` : code;
}
