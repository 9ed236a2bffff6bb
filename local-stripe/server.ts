/**
 * A local, in-memory, Stripe-compatible HTTP server (Node `http` only) for the
 * quick start and the tests, so nothing reaches the internet. The official SDK
 * talks to it with:
 *
 *   new Stripe(key, { host: '127.0.0.1', port, protocol: 'http', maxNetworkRetries: 0 })
 *
 * Routes:
 *   /v1/…               the Stripe API subset in api.ts (auth, idempotency, Stripe errors)
 *   /__control/…        test controls, no auth (failure injection, reset, state,
 *                       completing `processing` payment intents, an outage, the clock)
 *   /stripe-js/v3       a Stripe.js stand-in for the browser (stripe-js.js)
 *
 * Every response carries permissive CORS headers because the Stripe.js
 * stand-in calls /v1/tokens from the browser with the publishable key.
 */
import fs from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { accountCounts, handleApi } from './api';
import { Account, LocalStripeState, newId, processorClock, processorNow } from './objects';
import { completeProcessing } from './payment-intents';
import { StripeHttpError, type StripeErrorBody, apiError, invalidRequest } from './errors';
import { type FormObject, type FormValue, FormParseError, parseForm, parseQuery } from './form';

export interface LocalStripeServer {
  /** e.g. `http://127.0.0.1:12111` */
  url: string;
  port: number;
  close(): Promise<void>;
  /**
   * Goes away as an unreachable processor does: the port stops listening (connections are
   * refused) and open connections are cut, answers under way included. Objects, idempotency
   * keys and failure rules are kept, and a request already taken in is still carried out.
   */
  suspend(): Promise<void>;
  /** Listens again on the same port, with everything `suspend` kept. */
  resume(): Promise<void>;
}

export interface LocalStripeHandler {
  (req: IncomingMessage, res: ServerResponse): void;
  /**
   * What POST /__control/outage does: set by `startLocalStripe`, which owns the listening
   * socket (a bare handler answers the control with 501).
   */
  outage?: (durationMs: number) => void;
  /** Clears all objects, idempotency keys and pending failure rules (same as POST /__control/reset). */
  reset(): void;
  /** Cancels pending delayed answers (their requests are dropped); call before closing the server. */
  shutdown(): void;
  readonly state: LocalStripeState;
}

const API_VERSION = '2025-01-01.local';
const MAX_BODY_BYTES = 1024 * 1024;
const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

const CORS_HEADERS: Record<string, string> = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Methods': 'GET, POST, DELETE, OPTIONS',
  'Access-Control-Allow-Headers': 'Authorization, Content-Type, Idempotency-Key, Stripe-Version, Stripe-Account',
  'Access-Control-Expose-Headers': 'Request-Id, Idempotency-Key, Idempotent-Replayed',
  'Access-Control-Max-Age': '600',
};

// ---------------------------------------------------------------------------
// Failure injection (/__control/fail)

interface FailureRule {
  id: number;
  pathPrefix: string;
  method: string | null;
  /** Only requests made with this API key (a company's key refused for a while). */
  key: string | null;
  remaining: number;
  /** Answer with this HTTP status instead of the real answer. */
  status: number | null;
  /** Hold the answer this long. */
  delayMs: number;
  /**
   * false: the delay/failure happens before the request is processed (nothing
   * is done; a request whose client gave up during the delay is dropped).
   * true: the request is processed first (objects created, charge made), then
   * the answer is delayed/replaced — a timeout where the charge happened but the
   * caller never saw the answer.
   */
  after: boolean;
  /**
   * With a delay before processing: the request is processed when the delay ends even if
   * its client gave up meanwhile — the charge reaches the bank after the caller stopped
   * waiting (and after any look-up it made at once). The key stays in flight until then.
   */
  late: boolean;
  /** Payments confirmed by the request stop at `processing` (POST /__control/payment_intents/{id}/complete ends them). */
  processing: boolean;
  /**
   * The request is held, its key in flight (409 to any other request with it), until POST
   * /__control/release, then carried out whether or not its client still waits: a payment that
   * reaches the bank as late as the test says.
   */
  hold: boolean;
  /**
   * The answer is lost: the request is carried out (after `delay_ms`, if any), then the
   * connection is reset without a byte of the answer, as when a network path dies mid-call.
   * Stripe's SDK sends a request once more when its connection is reset before an answer (it
   * takes that for a stale keep-alive socket), so losing one call's answer takes `count: 2`.
   */
  lose: boolean;
  error: Partial<Pick<StripeErrorBody, 'type' | 'code' | 'message'>>;
}

/** Stripe's own answer for each refusal status an injected rule gives without saying more. */
const REFUSALS: Record<number, { type: StripeErrorBody['type']; message: string; code?: string }> = {
  401: { type: 'invalid_request_error', message: 'Invalid API Key provided: sk_test_****', code: 'api_key_expired' },
  403: { type: 'invalid_request_error', message: 'The provided key does not have the required permissions for this endpoint.', code: 'secret_key_required' },
  409: {
    type: 'invalid_request_error',
    message: 'There is currently another in-progress request using this Idempotent Key (that probably means you submitted twice, and the other request is still going through). Please try again later.',
    code: 'idempotency_key_in_use',
  },
  429: { type: 'invalid_request_error', message: 'Request rate limit exceeded.', code: 'rate_limit' },
};

/**
 * The Stripe.js stand-in for the browser (stripe-js.js), read once: beside this file, and beside
 * the bundle made of it (dist/, where the build copies it).
 */
let stripeJsText: string | undefined;
function stripeJs(): string {
  return (stripeJsText ??= fs.readFileSync(new URL('./stripe-js.js', import.meta.url), 'utf8'));
}

function injectedError(rule: FailureRule): StripeHttpError {
  const status = rule.status ?? 500;
  const known = REFUSALS[status] ?? { type: 'api_error' as const, message: 'An unknown error occurred while processing your request.' };
  const body: StripeErrorBody = { type: rule.error.type ?? known.type, message: rule.error.message ?? `${known.message} (injected by /__control/fail)` };
  const code = rule.error.code ?? known.code;
  if (code) body.code = code;
  return new StripeHttpError(status, body);
}

function parseFailureRule(input: unknown, id: number): FailureRule {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new Error('body must be a JSON object');
  const o = input as Record<string, unknown>;
  const int = (key: string, min: number, max: number): number | null => {
    const v = o[key];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      throw new Error(`${key} must be an integer between ${min} and ${max}`);
    }
    return v;
  };
  const str = (key: string): string | undefined => {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') throw new Error(`${key} must be a string`);
    return v;
  };
  const status = int('status', 400, 599);
  const delayMs = int('delay_ms', 0, 600_000) ?? 0;
  const processing = o.processing === true;
  const lose = o.lose === true;
  const hold = o.hold === true;
  if (status === null && delayMs === 0 && !processing && !lose && !hold) throw new Error('give a status (400-599), a delay_ms, hold: true, lose: true and/or processing: true');
  if (hold && (delayMs > 0 || o.after === true || o.late === true || lose)) throw new Error('hold excludes delay_ms, after, late and lose');
  if (o.late === true && (o.after === true || delayMs === 0)) throw new Error('late needs a delay_ms and excludes after');
  if (lose && (status !== null || o.after === true || o.late === true)) throw new Error('lose excludes status, after and late (its delay_ms holds the request before it is carried out)');
  const type = str('type');
  if (type !== undefined && !['invalid_request_error', 'card_error', 'api_error', 'idempotency_error'].includes(type)) {
    throw new Error('type must be a Stripe error type');
  }
  return {
    id,
    pathPrefix: str('path_prefix') ?? '/v1',
    method: str('method')?.toUpperCase() ?? null,
    key: str('key') ?? null,
    remaining: int('count', 1, 1_000_000) ?? 1,
    status,
    delayMs,
    after: o.after === true,
    late: o.late === true,
    processing,
    lose,
    hold,
    error: { type: type as StripeErrorBody['type'] | undefined, code: str('code'), message: str('message') },
  };
}

// ---------------------------------------------------------------------------
// Idempotency

interface IdempotencyRecord {
  fingerprint: string;
  status: number;
  body: string;
  requestId: string;
  storedAt: number;
}

/** Order-insensitive description of a request, to tell "same request" from "key reuse". */
function fingerprint(method: string, path: string, params: FormObject): string {
  const canonical = (v: FormValue): unknown => {
    if (typeof v === 'string') return v;
    if (Array.isArray(v)) return v.map(canonical);
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, canonical(v[k])]),
    );
  };
  return JSON.stringify([method, path, canonical(params)]);
}

// ---------------------------------------------------------------------------
// Auth

interface Auth {
  key: string;
  /** Account namespace: `sk_test_X`, `rk_test_X` and `pk_test_X` all map to `test_X`. */
  namespace: string;
  publishable: boolean;
}

const KEY_PATTERN = /^(sk|pk|rk)_(test|live)_[A-Za-z0-9_-]+$/;

function authenticate(header: string | undefined): Auth {
  let key: string | undefined;
  if (header?.startsWith('Bearer ')) key = header.slice(7).trim();
  else if (header?.startsWith('Basic ')) {
    // curl -u sk_test_…: — the key is the user name.
    key = Buffer.from(header.slice(6), 'base64').toString('utf8').split(':')[0];
  }
  if (!key) {
    throw invalidRequest(
      "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.",
      { status: 401 },
    );
  }
  if (!KEY_PATTERN.test(key)) {
    const masked = key.length > 12 ? `${key.slice(0, 8)}${'*'.repeat(Math.min(key.length - 12, 24))}${key.slice(-4)}` : '****';
    throw invalidRequest(`Invalid API Key provided: ${masked}`, { code: 'api_key_invalid', status: 401 });
  }
  return { key, namespace: key.replace(/^(sk|pk|rk)_/, ''), publishable: key.startsWith('pk_') };
}

/** The key a request names (for failure rules bound to a key); null when it names none. */
function bearerKey(header: string | undefined): string | null {
  if (header?.startsWith('Bearer ')) return header.slice(7).trim();
  if (header?.startsWith('Basic ')) return Buffer.from(header.slice(6), 'base64').toString('utf8').split(':')[0] || null;
  return null;
}

// ---------------------------------------------------------------------------
// HTTP plumbing

interface Answer {
  status: number;
  body: string;
  headers: Record<string, string>;
}

function jsonAnswer(status: number, value: unknown, headers: Record<string, string> = {}): Answer {
  // Stripe pretty-prints its JSON.
  return { status, body: `${JSON.stringify(value, null, 2)}\n`, headers };
}

function send(res: ServerResponse, answer: Answer, contentType = 'application/json'): void {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(answer.status, {
    ...CORS_HEADERS,
    'Content-Type': contentType,
    'Content-Length': String(Buffer.byteLength(answer.body)),
    'Cache-Control': 'no-cache, no-store',
    ...answer.headers,
  });
  res.end(answer.body);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(invalidRequest('Request body too large.', { status: 413 }));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

// ---------------------------------------------------------------------------

/** The request listener, usable with any `http.Server`. State lives in the closure. */
export function createLocalStripeHandler(): LocalStripeHandler {
  const state = new LocalStripeState();
  const idempotency = new Map<string, Map<string, IdempotencyRecord>>();
  /** `${namespace}\n${key}` of POSTs still being processed (e.g. held by an injected delay). */
  const inFlight = new Set<string>();
  let rules: FailureRule[] = [];
  let nextRuleId = 1;
  const pendingSleeps = new Set<() => void>();
  /** Requests held by a `hold` rule, each resumed by POST /__control/release (true) or shutdown (false). */
  const held: ((go: boolean) => void)[] = [];

  function reset(): void {
    state.reset();
    idempotency.clear();
    rules = [];
    processorClock.offsetMs = 0;
  }

  /** Resolves true after `ms`, or false early if the handler is shut down. */
  function sleep(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const cancel = () => {
        clearTimeout(timer);
        pendingSleeps.delete(cancel);
        resolve(false);
      };
      const timer = setTimeout(() => {
        pendingSleeps.delete(cancel);
        resolve(true);
      }, ms);
      pendingSleeps.add(cancel);
    });
  }

  function takeRule(method: string, path: string, key: string | null): FailureRule | null {
    const rule = rules.find((r) => path.startsWith(r.pathPrefix) && (r.method === null || r.method === method) && (r.key === null || r.key === key));
    if (!rule) return null;
    rule.remaining -= 1;
    if (rule.remaining <= 0) rules = rules.filter((r) => r !== rule);
    return rule;
  }

  function idempotencyStore(namespace: string): Map<string, IdempotencyRecord> {
    let store = idempotency.get(namespace);
    if (!store) {
      store = new Map();
      idempotency.set(namespace, store);
    }
    // Keys live 24 hours on the processor's clock: past that, the same key makes a new request.
    const cutoff = processorNow() - IDEMPOTENCY_TTL_MS;
    for (const [k, rec] of store) if (rec.storedAt < cutoff) store.delete(k);
    return store;
  }

  function errorAnswer(err: unknown, requestId: string): Answer {
    if (err instanceof StripeHttpError) return jsonAnswer(err.status, err.toJSON(), { 'Request-Id': requestId });
    console.error('[local-stripe] internal error:', err);
    return jsonAnswer(500, apiError(500).toJSON(), { 'Request-Id': requestId });
  }

  interface Prepared {
    auth: Auth;
    params: FormObject;
    idempotencyKey: string | null;
  }

  /** Auth and parameter parsing: no side effects. */
  function prepare(req: IncomingMessage, method: string, url: URL, body: string): Prepared {
    const auth = authenticate(headerValue(req, 'authorization'));
    const contentType = headerValue(req, 'content-type') ?? '';
    if (body !== '' && contentType !== '' && !contentType.startsWith('application/x-www-form-urlencoded')) {
      throw invalidRequest(
        `Invalid request: unsupported Content-Type ${contentType}. Stripe's v1 API takes application/x-www-form-urlencoded bodies.`,
      );
    }
    let params: FormObject;
    try {
      // Stripe also reads query params on POST; body params win.
      params = { ...parseQuery(url.search), ...(method === 'POST' ? parseForm(body) : {}) };
    } catch (err) {
      if (err instanceof FormParseError) throw invalidRequest(err.message, { param: err.param });
      throw err;
    }
    const idempotencyKey = method === 'POST' ? (headerValue(req, 'idempotency-key') ?? null) : null;
    if (idempotencyKey !== null && (idempotencyKey === '' || idempotencyKey.length > 255)) {
      throw invalidRequest('Idempotency keys must be between 1 and 255 characters long.', {
        code: 'idempotency_key_invalid',
      });
    }
    return { auth, params, idempotencyKey };
  }

  /** Runs a prepared /v1 request, replaying or saving idempotent results. Synchronous. */
  function execute(method: string, path: string, p: Prepared, requestId: string, processing = false): Answer {
    const echo: Record<string, string> = { 'Request-Id': requestId, 'Stripe-Version': API_VERSION };
    const store = p.idempotencyKey !== null ? idempotencyStore(p.auth.namespace) : null;
    const print = fingerprint(method, path, p.params);
    if (store && p.idempotencyKey !== null) {
      echo['Idempotency-Key'] = p.idempotencyKey;
      const previous = store.get(p.idempotencyKey);
      if (previous && previous.fingerprint !== print) {
        throw new StripeHttpError(400, {
          type: 'idempotency_error',
          message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${p.idempotencyKey}' if you meant to execute a different request.`,
        });
      }
      if (previous) {
        return {
          status: previous.status,
          body: previous.body,
          headers: { ...echo, 'Request-Id': previous.requestId, 'Idempotent-Replayed': 'true' },
        };
      }
    }
    let answer: Answer;
    let executed = true;
    try {
      const account = state.account(p.auth.namespace);
      const result = handleApi({ method, path, params: p.params, account, state, publishable: p.auth.publishable, processing });
      answer = jsonAnswer(200, result, echo);
    } catch (err) {
      // Validation errors are not saved (Stripe only saves once an endpoint began executing);
      // card declines and internal errors are.
      executed = err instanceof StripeHttpError ? err.executed : true;
      answer = errorAnswer(err, requestId);
      answer.headers = { ...answer.headers, ...echo };
    }
    if (store && p.idempotencyKey !== null && executed) {
      store.set(p.idempotencyKey, {
        fingerprint: print,
        status: answer.status,
        body: answer.body,
        requestId,
        storedAt: processorNow(),
      });
    }
    return answer;
  }

  async function serveApi(req: IncomingMessage, res: ServerResponse, method: string, url: URL): Promise<void> {
    const requestId = newId('req', 14);
    let clientGone = false;
    res.on('close', () => {
      if (!res.writableEnded) clientGone = true;
    });
    const body = method === 'POST' ? await readBody(req) : '';
    const rule = takeRule(method, url.pathname, bearerKey(headerValue(req, 'authorization')));

    let prepared: Prepared;
    try {
      prepared = prepare(req, method, url, body);
    } catch (err) {
      send(res, errorAnswer(err, requestId));
      return;
    }

    // A refusal (401, 403, 409, 5xx…) comes before the key is taken: Stripe checks the API key
    // before its idempotency cache, so such an answer says nothing of what the key did before.
    if (rule && !rule.after && !rule.late && rule.delayMs === 0 && rule.status !== null) {
      send(res, errorAnswer(injectedError(rule), requestId));
      return;
    }
    // Stripe answers 409 while another request with the same key is still running.
    const flightKey = prepared.idempotencyKey !== null ? `${prepared.auth.namespace}\n${prepared.idempotencyKey}` : null;
    if (flightKey && inFlight.has(flightKey)) {
      const err = invalidRequest(
        'There is currently another in-progress request using this Idempotent Key (that probably means you submitted twice, and the other request is still going through). Please try again later.',
        { code: 'idempotency_key_in_use', status: 409 },
      );
      send(res, errorAnswer(err, requestId));
      return;
    }
    if (flightKey) inFlight.add(flightKey);
    try {
      if (rule?.lose) {
        if (rule.delayMs > 0 && !(await sleep(rule.delayMs))) return;
        execute(method, url.pathname, prepared, requestId, rule.processing);
        // Carried out, and the answer never arrives: the connection is reset.
        req.socket.resetAndDestroy();
        return;
      }
      if (rule?.hold && !(await new Promise<boolean>((resume) => held.push(resume)))) return;
      if (rule && !rule.after && !rule.hold) {
        if (rule.delayMs > 0 && !(await sleep(rule.delayMs))) return;
        // The request "never reached Stripe": nothing processed (unless it arrives late).
        if (clientGone && !rule.late) return;
        if (rule.status !== null) {
          send(res, errorAnswer(injectedError(rule), requestId));
          return;
        }
      }
      const answer = execute(method, url.pathname, prepared, requestId, rule?.processing === true);
      if (rule?.after) {
        if (rule.delayMs > 0 && !(await sleep(rule.delayMs))) return;
        if (rule.status !== null) {
          send(res, errorAnswer(injectedError(rule), requestId));
          return;
        }
      }
      send(res, answer);
    } finally {
      if (flightKey) inFlight.delete(flightKey);
    }
  }

  async function serveControl(req: IncomingMessage, res: ServerResponse, method: string, url: URL): Promise<void> {
    const path = url.pathname;
    if (method === 'POST' && path === '/__control/reset') {
      await readBody(req);
      reset();
      send(res, jsonAnswer(200, { ok: true }));
      return;
    }
    if (method === 'POST' && path === '/__control/fail') {
      const raw = await readBody(req);
      try {
        const rule = parseFailureRule(JSON.parse(raw || '{}'), nextRuleId++);
        rules.push(rule);
        send(res, jsonAnswer(200, { ok: true, rule_id: rule.id, pending: rules.length }));
      } catch (err) {
        send(res, jsonAnswer(400, { error: { type: 'invalid_request_error', message: (err as Error).message } }));
      }
      return;
    }
    if (method === 'POST' && path === '/__control/release') {
      await readBody(req);
      const released = held.length;
      for (const resume of held.splice(0)) resume(true);
      send(res, jsonAnswer(200, { ok: true, released }));
      return;
    }
    if (method === 'POST' && path === '/__control/clock') {
      const raw = await readBody(req);
      let advance: unknown;
      try {
        advance = (JSON.parse(raw || '{}') as { advance_ms?: unknown }).advance_ms;
      } catch {
        advance = undefined;
      }
      if (typeof advance !== 'number' || !Number.isInteger(advance) || advance < 0 || advance > 400 * 86_400_000) {
        send(res, jsonAnswer(400, { error: { type: 'invalid_request_error', message: 'advance_ms must be an integer between 0 and 34560000000 (400 days)' } }));
        return;
      }
      processorClock.offsetMs += advance;
      send(res, jsonAnswer(200, { ok: true, now: new Date(processorNow()).toISOString() }));
      return;
    }
    if (method === 'DELETE' && path === '/__control/fail') {
      const cleared = rules.length;
      rules = [];
      send(res, jsonAnswer(200, { ok: true, cleared }));
      return;
    }
    if (method === 'POST' && path === '/__control/outage') {
      const raw = await readBody(req);
      let durationMs: unknown;
      try {
        durationMs = (JSON.parse(raw || '{}') as { duration_ms?: unknown }).duration_ms;
      } catch {
        durationMs = undefined;
      }
      if (typeof durationMs !== 'number' || !Number.isInteger(durationMs) || durationMs < 1 || durationMs > 600_000) {
        send(res, jsonAnswer(400, { error: { type: 'invalid_request_error', message: 'duration_ms must be an integer between 1 and 600000' } }));
        return;
      }
      if (!handler.outage) {
        send(res, jsonAnswer(501, { error: { type: 'api_error', message: 'This handler does not own its server: an outage needs startLocalStripe' } }));
        return;
      }
      const outage = handler.outage;
      // Answered first: the caller learns the outage began, then the port goes away.
      res.once('finish', () => outage(durationMs as number));
      send(res, jsonAnswer(200, { ok: true, duration_ms: durationMs }));
      return;
    }
    const complete = /^\/__control\/payment_intents\/([A-Za-z0-9_]+)\/complete$/.exec(path);
    if (method === 'POST' && complete) {
      await readBody(req);
      const pi = completeProcessing(state, complete[1]);
      if (pi) send(res, jsonAnswer(200, pi));
      else send(res, jsonAnswer(404, { error: { type: 'invalid_request_error', message: `No processing payment intent ${complete[1]}` } }));
      return;
    }
    if (method === 'GET' && path === '/__control/state') {
      const accounts: Record<string, ReturnType<typeof accountCounts> & { idempotency_keys: number }> = {};
      for (const [namespace, account] of state.accounts) {
        accounts[namespace] = { ...accountCounts(account), idempotency_keys: idempotency.get(namespace)?.size ?? 0 };
      }
      const out: Record<string, unknown> = {
        accounts,
        tokens: state.tokens.size,
        pending_failures: rules.map((r) => ({
          id: r.id,
          path_prefix: r.pathPrefix,
          method: r.method,
          remaining: r.remaining,
          status: r.status,
          delay_ms: r.delayMs,
          after: r.after,
          late: r.late,
          processing: r.processing,
          lose: r.lose,
          hold: r.hold,
          key: r.key,
        })),
        now: new Date(processorNow()).toISOString(),
      };
      // ?key=sk_test_… → that account's counts (zeros when it has never been used).
      const key = url.searchParams.get('key');
      if (key) {
        const namespace = key.replace(/^(sk|pk|rk)_/, '');
        out.account = {
          ...accountCounts(state.accounts.get(namespace) ?? new Account()),
          idempotency_keys: idempotency.get(namespace)?.size ?? 0,
        };
      }
      send(res, jsonAnswer(200, out));
      return;
    }
    send(res, jsonAnswer(404, { error: { type: 'invalid_request_error', message: `Unknown control ${method} ${path}` } }));
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = (req.method ?? 'GET').toUpperCase();
    const url = new URL(req.url ?? '/', 'http://local-stripe');
    if (method === 'OPTIONS') {
      res.writeHead(204, CORS_HEADERS);
      res.end();
      return;
    }
    if (url.pathname.startsWith('/v1/') || url.pathname === '/v1') return serveApi(req, res, method, url);
    if (url.pathname.startsWith('/__control/')) return serveControl(req, res, method, url);
    if (method === 'GET' && /^\/stripe-js\/v3\/?$/.test(url.pathname)) {
      send(res, { status: 200, body: stripeJs(), headers: {} }, 'application/javascript; charset=utf-8');
      return;
    }
    send(res, jsonAnswer(404, { error: { type: 'invalid_request_error', message: `Not found: ${method} ${url.pathname}` } }));
  }

  const handler: LocalStripeHandler = Object.assign(
    (req: IncomingMessage, res: ServerResponse): void => {
      route(req, res).catch((err: unknown) => {
        const answer = errorAnswer(err, newId('req', 14));
        send(res, answer);
      });
    },
    {
      reset,
      shutdown: () => {
        for (const cancel of [...pendingSleeps]) cancel();
        for (const resume of held.splice(0)) resume(false);
      },
      state,
    },
  );
  return handler;
}

/** Starts the server; `port: 0` (the default) picks a free port. */
export async function startLocalStripe(opts: { port?: number; host?: string } = {}): Promise<LocalStripeServer> {
  const host = opts.host ?? '127.0.0.1';
  const handler = createLocalStripeHandler();
  const server = createServer(handler);
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(opts.port ?? 0);
  const port = (server.address() as AddressInfo).port;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  let closed = false;
  let back: NodeJS.Timeout | undefined;
  const suspend = () =>
    new Promise<void>((resolve) => {
      if (!server.listening) return resolve();
      server.close(() => resolve());
      server.closeAllConnections();
    });
  const resume = async () => {
    clearTimeout(back);
    if (!closed && !server.listening) await listen(port);
  };
  handler.outage = (durationMs) => {
    void suspend().then(() => {
      back = setTimeout(() => void resume().catch((err: unknown) => console.error('[local-stripe] could not listen again:', err)), durationMs);
    });
  };
  return {
    url: `http://${urlHost}:${port}`,
    port,
    suspend,
    resume,
    close: () =>
      new Promise<void>((resolve, reject) => {
        closed = true;
        clearTimeout(back);
        handler.shutdown();
        if (!server.listening) return resolve();
        server.close((err) => (err ? reject(err) : resolve()));
        // The SDK keeps connections alive; without this close() would wait for them.
        server.closeAllConnections();
      }),
  };
}
