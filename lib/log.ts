import pino, { type DestinationStream, type Logger } from 'pino';
import { LOG_LEVELS, setting } from './env';

/**
 * The process's one logger: one JSON object per line on stdout (`level`, `time`, `msg` and the
 * fields of the line), at LOG_LEVEL. It lives on globalThis because Next.js gives route handlers,
 * pages and instrumentation module instances of their own, and they must share one stream.
 * Commands for a person (company:create, db:migrate, secrets:rotate) print plain text instead.
 */
export { LOG_LEVELS };
export type LogLevel = (typeof LOG_LEVELS)[number];

/** LOG_LEVEL, checked: a level that is not one of pino's names stops the start. */
export function logLevel(): LogLevel {
  return setting('LOG_LEVEL');
}

/**
 * Fields that hold a secret wherever a caller might put them, one level deep as well, and the
 * secret headers of a `headers` object on the line or one level down: they are written as
 * "[redacted]". Lines are built from ids and outcomes, never from request bodies or headers, so
 * this is the second line of defence, not the first.
 */
export const SECRET_FIELDS: ReadonlySet<string> = new Set([
  'authorization',
  'cookie',
  'password',
  'api_key',
  'apiKey',
  'secret',
  'token',
  'processor_key',
  'processor_publishable_key',
  'card_token',
]);
export const SECRET_HEADERS: ReadonlySet<string> = new Set(['authorization', 'cookie', 'x-api-key']);
const CENSOR = '[redacted]';

type Fields = Record<string, unknown>;

/** A copy of `fields` with `keys` censored, or `fields` itself when none is there. */
function censorKeys(fields: Fields, keys: ReadonlySet<string>): Fields {
  let out: Fields | null = null;
  for (const key in fields) {
    if (keys.has(key) && Object.hasOwn(fields, key) && fields[key] !== undefined) {
      out ??= Array.isArray(fields) ? ([...fields] as unknown as Fields) : { ...fields };
      out[key] = CENSOR;
    }
  }
  return out ?? fields;
}

const isFields = (value: unknown): value is Fields => value !== null && typeof value === 'object' && !(value instanceof Error);

/**
 * A line's fields with the secrets censored (see SECRET_FIELDS): copied where something is
 * censored, the caller's object left as it was. Errors go to serializeError, which keeps none of
 * their own properties. One pass over the line's keys: the lines of every request go through it.
 */
export function censorLine(line: Fields): Fields {
  let out: Fields | null = null;
  for (const key in line) {
    if (!Object.hasOwn(line, key)) continue;
    const value = line[key];
    let next = value;
    if (SECRET_FIELDS.has(key)) {
      if (value !== undefined) next = CENSOR;
    } else if (isFields(value)) {
      let inner = censorKeys(value, SECRET_FIELDS);
      if (key === 'headers') inner = censorKeys(inner, SECRET_HEADERS);
      const headers = inner.headers;
      if (Object.hasOwn(inner, 'headers') && isFields(headers)) {
        const censored = censorKeys(headers, SECRET_HEADERS);
        if (censored !== headers) inner = { ...inner, headers: censored };
      }
      next = inner;
    }
    if (next !== value) {
      out ??= { ...line };
      out[key] = next;
    }
  }
  return out ?? line;
}

type ErrorLike = { name?: unknown; message?: unknown; code?: unknown; stack?: unknown; constructor?: { name?: string }; query?: unknown; params?: unknown; cause?: unknown };

/**
 * An error as a line shows it: its kind, message, code and stack, nothing else. Driver and
 * processor errors carry the statement's parameters, the request or the answer's body as
 * properties of their own (pino's default serializer would print them all).
 */
export function serializeError(err: unknown): Record<string, unknown> {
  if (!err || typeof err !== 'object') return { message: String(err) };
  const e = err as ErrorLike;
  const out: Record<string, unknown> = { type: typeof e.name === 'string' ? e.name : (e.constructor?.name ?? 'Error'), message: String(e.message ?? '') };
  let code = e.code;
  let stack = typeof e.stack === 'string' ? e.stack : undefined;
  // Drizzle's failed-query error writes the statement's parameters into its message (a webhook
  // URL with a token in it, an email): the statement and the database's reason are enough.
  if (typeof e.query === 'string' && Array.isArray(e.params)) {
    const cause = (e.cause && typeof e.cause === 'object' ? e.cause : {}) as ErrorLike;
    const message = `Failed query: ${e.query}${cause.message ? ` (${String(cause.message)})` : ''}`;
    stack = stack?.replace(String(e.message), message);
    out.message = message;
    code ??= cause.code;
  }
  if (typeof code === 'string' || typeof code === 'number') out.code = code;
  if (stack) out.stack = stack;
  return out;
}

function create(destination: DestinationStream, level: string): Logger {
  return pino(
    {
      level,
      timestamp: pino.stdTimeFunctions.isoTime,
      // Our own pass instead of pino's `redact`, which re-parses every path on every line
      // (about 15 µs and 30 KB of garbage per line, and every request writes one).
      formatters: { level: (label) => ({ level: label }), log: censorLine },
      serializers: { err: serializeError },
    },
    destination,
  );
}

/** A level the logger can use even when LOG_LEVEL is wrong (the start refuses it separately). */
function safeLevel(): string {
  try {
    return logLevel();
  } catch {
    return 'info';
  }
}

type Holder = { logger?: Logger };
const holder: Holder = ((globalThis as { __billingLog?: Holder }).__billingLog ??= {});

export function logger(): Logger {
  // Synchronous writes: a line written just before the process exits is never lost.
  holder.logger ??= create(pino.destination({ fd: 1, sync: true }), safeLevel());
  return holder.logger;
}

/** The process logger; its methods are looked up at each call, so a later logTo applies everywhere. */
export const log: Logger = new Proxy({} as Logger, {
  get(_target, prop) {
    const target = logger();
    const value = Reflect.get(target, prop, target);
    return typeof value === 'function' ? value.bind(target) : value;
  },
});

/** Sends the lines somewhere else (a file, for the tests' own processes); returns the undo. */
export function logTo(destination: DestinationStream, level = safeLevel()): () => void {
  const previous = holder.logger;
  holder.logger = create(destination, level);
  return () => {
    holder.logger = previous;
  };
}

/**
 * For commands a person runs: warnings and errors as plain text on stderr (stdout stays the
 * command's own answer), the rest left out.
 */
export function logForCommandLine(): void {
  logTo(
    {
      write(line: string) {
        const entry = JSON.parse(line) as { msg?: string; err?: { message?: string } };
        process.stderr.write(`${entry.msg ?? ''}${entry.err?.message ? `: ${entry.err.message}` : ''}\n`);
      },
    },
    'warn',
  );
}
