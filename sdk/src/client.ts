import { BillingApiError, BillingConnectionError, BillingError, BillingTimeoutError } from './errors.js';
import { operations } from './operations.js';
import { ListPromise, type Page } from './pagination.js';
import { newIdempotencyKey, toBase64, utf8 } from './platform.js';
import type { CallOptions, HttpMethod, ListItem, ListPath, OptionsArg, PathsFor, RequestOptions, ResponseBody } from './types.js';

export type ClientOptions = {
  /** Where the service answers, e.g. `https://billing.example.com` (the paths start with /v1). */
  baseUrl: string;
  /** Your company id (`c_...`): the Basic auth username, and `{company_id}` in paths. */
  companyId?: string;
  /** An API key of the company: the Basic auth password. */
  apiKey?: string;
  /** The operator's token (`ADMIN_TOKEN`), for registering companies and the test clock. */
  adminToken?: string;
  /**
   * Retries after the first attempt, on 429, 5xx, timeouts and network errors. Default 3. A 409
   * of work still in progress is retried (when this is above 0) for as long as `timeoutMs`,
   * however many times that takes: the work it waits for may run that long.
   */
  maxRetries?: number;
  /** Time one attempt may take, answer included, in milliseconds (1 to 2147483647). Default 60000. */
  timeoutMs?: number;
  /** First backoff delay; each retry doubles it, with jitter. Default 500. */
  initialRetryDelayMs?: number;
  /** Largest backoff delay. Default 8000. */
  maxRetryDelayMs?: number;
  /** A Retry-After longer than this (ms) is not waited for: the call fails at once. Default 60000. */
  maxRetryAfterMs?: number;
  /** The fetch to use; default the platform's. */
  fetch?: typeof fetch;
  /**
   * Parses answer bodies; default JSON.parse. Units are exact decimals and may carry more digits
   * than a JS number holds: pass a lossless parser if you need every digit.
   */
  parseJson?: (text: string) => unknown;
};

const MUTATING = new Set<HttpMethod>(['post', 'put', 'patch', 'delete']);

type Auth = 'company' | 'admin' | 'public';
const AUTH_BY_ROUTE = new Map<string, Auth>(Object.values(operations).map((o) => [`${o.method} ${o.path}`, o.auth]));

/**
 * A 409 the service answers while other work on the same thing is under way and asks for a retry
 * in a moment: a request with the same Idempotency-Key still running, or a renewal or another plan
 * change of the account.
 */
function isInFlight(err: BillingApiError): boolean {
  // The service sends Retry-After with these; services before it only said so in the message.
  return err.status === 409 && err.type === 'conflict' && (err.retry_after !== null || /\bin progress\b/i.test(err.message));
}

/** Node turns a longer timer into 1 ms. */
const MAX_TIMER_MS = 2_147_483_647;

function checkTimeout(ms: number, name: string): number {
  if (!Number.isInteger(ms) || ms < 1 || ms > MAX_TIMER_MS) throw new BillingError(`${name} must be a whole number of milliseconds, 1 to ${MAX_TIMER_MS}; got ${ms}.`);
  return ms;
}

/** The service's idempotency headers, which it reads in this order. */
const KEY_HEADERS = ['idempotency-key', 'x-dedupeid'];

/** Removes the caller's idempotency headers (any spelling) from `headers`; answers the key the service would read. */
function takeKeyHeaders(headers: Record<string, string>): string | undefined {
  const found = new Map<string, string>();
  for (const name of Object.keys(headers)) {
    const lower = name.toLowerCase();
    if (!KEY_HEADERS.includes(lower)) continue;
    if (!found.has(lower)) found.set(lower, headers[name]);
    delete headers[name];
  }
  return KEY_HEADERS.map((h) => found.get(h)).find((v) => v !== undefined);
}

function isRetryable(err: BillingApiError): boolean {
  return err.status === 429 || err.status >= 500 || isInFlight(err);
}

function withKey<E extends BillingError>(err: E, key: string | undefined): E {
  err.idempotency_key = key ?? null;
  return err;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/**
 * The core of the client: authentication, idempotency keys, retries with backoff, timeouts,
 * errors and pagination, for any path of the document. The resource groups are built on it.
 */
export class BillingClient {
  readonly baseUrl: string;
  readonly companyId: string | undefined;
  readonly #apiKey: string | undefined;
  readonly #adminToken: string | undefined;
  readonly #options: Required<Pick<ClientOptions, 'maxRetries' | 'timeoutMs' | 'initialRetryDelayMs' | 'maxRetryDelayMs' | 'maxRetryAfterMs'>>;
  readonly #fetch: typeof fetch;
  readonly #parseJson: (text: string) => unknown;

  constructor(options: ClientOptions) {
    if (!options.baseUrl) throw new BillingError('baseUrl is required, e.g. https://billing.example.com');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.companyId = options.companyId;
    this.#apiKey = options.apiKey;
    this.#adminToken = options.adminToken;
    this.#options = {
      maxRetries: options.maxRetries ?? 3,
      timeoutMs: checkTimeout(options.timeoutMs ?? 60_000, 'timeoutMs'),
      initialRetryDelayMs: options.initialRetryDelayMs ?? 500,
      maxRetryDelayMs: options.maxRetryDelayMs ?? 8_000,
      maxRetryAfterMs: options.maxRetryAfterMs ?? 60_000,
    };
    const platformFetch = options.fetch ?? globalThis.fetch;
    if (typeof platformFetch !== 'function') throw new BillingError('No fetch: use Node 18 or newer, or pass options.fetch.');
    // Called unbound, browsers' fetch throws "Illegal invocation".
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#parseJson = options.parseJson ?? JSON.parse;
  }

  /**
   * One call of the document's `method` `path`, typed by the document: `path` parameters
   * (`company_id` defaults to the client's), `query`, `body`. Answers the 200 body as sent
   * (`{ data }`, or `{ data, has_more }` for lists); throws BillingApiError for an error answer.
   */
  request<M extends HttpMethod, P extends PathsFor<M>>(method: M, path: P, ...[options]: OptionsArg<RequestOptions<P, M>>): Promise<ResponseBody<P, M>> {
    return this.#send(method, path, (options ?? {}) as RawOptions) as Promise<ResponseBody<P, M>>;
  }

  /**
   * A list at `path`: `await` it for the first page, or `for await` over every item of every
   * page (it follows `has_more` with `starting_after`).
   */
  paginate<P extends ListPath>(path: P, ...[options]: OptionsArg<RequestOptions<P, 'get'>>): ListPromise<ListItem<P>> {
    const raw = (options ?? {}) as RawOptions;
    const query = { ...(raw.query ?? {}) };
    const first = typeof query.starting_after === 'string' ? query.starting_after : undefined;
    return new ListPromise<ListItem<P>>(
      (after) => this.#send('get', path, { ...raw, query: { ...query, ...(after !== undefined && { starting_after: after }) } }) as Promise<Page<ListItem<P>>>,
      first,
    );
  }

  async #send(method: HttpMethod, path: string, options: RawOptions): Promise<unknown> {
    const url = this.#url(path, options);
    const headers: Record<string, string> = { Accept: 'application/json', ...this.#auth(method, path), ...options.headers };
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['Content-Type'] = 'application/json';
    }
    // One key for every attempt: a retry of a request that did run is answered from the first.
    // A key the caller passed (the option, or either header the service reads, in any case) is
    // the one sent; only without one is a key made.
    const given = takeKeyHeaders(headers);
    const key = options.idempotencyKey ?? given ?? (MUTATING.has(method) ? await newIdempotencyKey() : undefined);
    if (key !== undefined) headers['Idempotency-Key'] = key;

    const maxRetries = options.maxRetries ?? this.#options.maxRetries;
    const timeoutMs = options.timeoutMs === undefined ? this.#options.timeoutMs : checkTimeout(options.timeoutMs, 'timeoutMs');
    let retries = 0;
    let waitingSince: number | undefined;
    for (let attempt = 0; ; attempt++) {
      let failure: BillingApiError | BillingConnectionError;
      try {
        const { status, text, headers: answered } = await this.#attempt(url, { method: method.toUpperCase(), headers, body }, timeoutMs, options.signal);
        let parsed: unknown = null;
        try {
          parsed = text ? this.#parseJson(text) : null;
        } catch {
          if (status >= 200 && status < 300) throw new BillingApiError(status, null, answered);
        }
        if (status >= 200 && status < 300) return parsed;
        const answer = new BillingApiError(status, parsed, answered);
        if (!isRetryable(answer)) throw withKey(answer, key);
        failure = answer;
      } catch (err) {
        if (options.signal?.aborted) throw options.signal.reason;
        if (!(err instanceof BillingConnectionError)) throw err instanceof BillingError ? withKey(err, key) : err;
        failure = err;
      }
      withKey(failure, key);
      if (maxRetries <= 0) throw failure;
      if (failure instanceof BillingApiError && isInFlight(failure)) {
        // Work under way on the same thing: waited for up to timeoutMs, not counted as a retry.
        waitingSince ??= Date.now();
        if (Date.now() - waitingSince >= timeoutMs) throw failure;
      } else if (retries++ >= maxRetries) {
        throw failure;
      }
      const delay = this.#retryDelay(attempt, failure);
      if (delay === null) throw failure;
      await sleep(delay, options.signal);
    }
  }

  async #attempt(url: string, init: { method: string; headers: Record<string, string>; body?: string }, timeoutMs: number, signal?: AbortSignal) {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onAbort = () => controller.abort(signal!.reason);
    if (signal?.aborted) controller.abort(signal.reason);
    else signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const res = await this.#fetch(url, { ...init, signal: controller.signal });
      // The body is part of the attempt: a connection cut while it streams is a network error.
      const text = await res.text();
      return { status: res.status, text, headers: res.headers };
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      if (timedOut) throw new BillingTimeoutError(`No answer within ${timeoutMs} ms: ${init.method} ${url}`, { cause: err });
      throw new BillingConnectionError(`The request failed before an answer came: ${init.method} ${url}`, { cause: err });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Exponential backoff with jitter, at least what Retry-After asks; null: do not wait that long. */
  #retryDelay(attempt: number, failure: BillingApiError | BillingConnectionError): number | null {
    const { initialRetryDelayMs, maxRetryDelayMs, maxRetryAfterMs } = this.#options;
    const base = Math.min(maxRetryDelayMs, initialRetryDelayMs * 2 ** attempt);
    const backoff = base / 2 + Math.random() * (base / 2);
    const retryAfter = failure instanceof BillingApiError && failure.retry_after !== null ? failure.retry_after * 1000 : null;
    if (retryAfter === null) return backoff;
    if (retryAfter > maxRetryAfterMs) return null;
    return Math.max(retryAfter, backoff);
  }

  #url(path: string, options: RawOptions): string {
    const params: Record<string, string> = { ...(this.companyId !== undefined && { company_id: this.companyId }), ...options.path };
    const filled = path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = params[name];
      if (value === undefined || value === '') throw new BillingError(name === 'company_id' ? 'companyId is required for this call.' : `Path parameter ${name} is required.`);
      return encodeURIComponent(String(value));
    });
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(options.query ?? {})) {
      if (v === undefined || v === null) continue;
      // An object is sent as name[key]=value (properties[model]=large).
      if (typeof v === 'object') for (const [kk, vv] of Object.entries(v)) search.set(`${k}[${kk}]`, String(vv));
      else search.set(k, String(v));
    }
    const qs = search.toString();
    return `${this.baseUrl}${filled}${qs ? `?${qs}` : ''}`;
  }

  #auth(method: HttpMethod, path: string): Record<string, string> {
    const auth = AUTH_BY_ROUTE.get(`${method} ${path}`) ?? 'company';
    if (auth === 'admin') {
      if (!this.#adminToken) throw new BillingError(`${method.toUpperCase()} ${path} is the operator's call: pass adminToken.`);
      return { Authorization: `Bearer ${this.#adminToken}` };
    }
    if (auth === 'company') {
      if (!this.companyId || !this.#apiKey) throw new BillingError(`${method.toUpperCase()} ${path} needs companyId and apiKey.`);
      return { Authorization: `Basic ${toBase64(utf8(`${this.companyId}:${this.#apiKey}`))}` };
    }
    return {};
  }
}

type RawOptions = CallOptions & { path?: Record<string, string>; query?: Record<string, unknown>; body?: unknown };
