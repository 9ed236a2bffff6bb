import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { getDatabase, type Db } from '../db/client';
import { isDatabaseUnavailable, unavailableReason } from '../db/unavailable';
import { readOnReplica } from '../db/replica';
import { ApiError, errorEnvelope } from '../errors';
import { now } from '../clock';
import { stringifyJson } from '../money';
import { log } from '../log';
import { observed, type Seen } from '../metrics/requests';
import { authenticateAdmin, authenticateCompany, type Company } from './auth';
import { claimIdempotencyKey, finishIdempotencyKey, holdIdempotencyKey, idempotencyTiming, type Stored } from './idempotency';
import { describeIssue, parseOptions } from './zod-errors';
import { checkStorable } from './input';
import { parseJsonBody, refuseInexact } from './json';
import { checkAddressRateLimit, checkAuthFailures, checkRateLimit, holdCompanySlot, recordAuthFailure } from './rate-limit';
import { MAX_BODY, PUBLIC_MAX_BODY, readBoundedBody } from './body';
import { clientAddress } from '../net/client-address';
import type { Page } from '../db/keyset';

const OPERATOR_SCOPE = '_operator';

export type Reply = {
  data: unknown;
  status?: number;
  headers?: Record<string, string>;
  /** Set for lists: the wrapper adds the `Link: rel="next"` header. */
  nextAfter?: string | null;
  /** Set for lists: sent as `has_more` beside `data`. */
  hasMore?: boolean;
};

export const ok = (data: unknown, headers?: Record<string, string>): Reply => ({ data, headers });

/** A list reply: items serialized, newest first, with the id to continue after when more exist. */
export function list<T extends { id: string }, O>(page: Page<T>, serialize: (item: T) => O): Reply {
  const last = page.items[page.items.length - 1];
  return { data: page.items.map(serialize), nextAfter: page.hasMore && last ? last.id : null, hasMore: page.hasMore };
}

/**
 * A short list read whole and answered a page at a time, like every list: `limit` items after
 * the one whose key is `starting_after` (its id; a webhook subscription's topic), with has_more
 * and the Link header. A key that is not in the list is a 400.
 */
export function pageOf<T>(items: T[], query: { limit: number; starting_after?: string }, keyOf: (item: T) => string): Reply {
  let from = 0;
  if (query.starting_after !== undefined) {
    const at = items.findIndex((item) => keyOf(item) === query.starting_after);
    if (at < 0) throw new ApiError('invalid_request', `starting_after ${JSON.stringify(query.starting_after.slice(0, 100))} is not an item of this list.`, 'starting_after');
    from = at + 1;
  }
  const data = items.slice(from, from + query.limit);
  const hasMore = from + query.limit < items.length;
  return { data, hasMore, nextAfter: hasMore ? keyOf(data[data.length - 1]) : null };
}

type RouteContext = { params: Promise<Record<string, string | string[]>> };

type Base<B, Q, P = undefined> = {
  req: Request;
  requestId: string;
  params: Record<string, string>;
  body: B;
  query: Q;
  db: Db;
  dbKind: 'embedded' | 'postgres';
  idempotencyKey: string | null;
  /** What the route's `prepare` made of the body, before any database work. */
  prepared: P;
};

type Options<B, Q, P = undefined> = {
  body?: z.ZodType<B>;
  query?: z.ZodType<Q>;
  /** A POST whose body may be left out entirely (e.g. creating an empty balance). */
  optionalBody?: boolean;
  /** For array bodies: more items is 413, checked before any item is validated. */
  maxItems?: number;
  /**
   * The handler only writes to the database (no processor or webhook call under way): with an
   * Idempotency-Key, the key, the handler's writes and the stored answer commit in one
   * transaction. A process or database that dies mid-request leaves all or nothing, so a retry
   * never applies the request twice (a key left "in progress" by a dead process is run again
   * after a minute, which is only safe when its writes died with it). A function decides per
   * request (a deposit charges nothing, or calls the processor). On the embedded database too:
   * its one connection is the request's until the commit, so keyed requests there take turns
   * (bench/README.md), but a retry after a crash still applies nothing twice.
   */
  atomic?: boolean | ((body: B) => boolean);
  /**
   * Slow work on the valid body that needs no database (a password's hash), done before the
   * Idempotency-Key is claimed: an atomic request holds its transaction while its handler runs,
   * and on the embedded database that transaction holds the whole database.
   */
  prepare?: (body: B) => Promise<P>;
  /**
   * A read that may lag a little (a list of usage): the handler's `db` is DATABASE_REPLICA_URL's
   * when one is set and answers, the primary's otherwise. Authentication always reads the primary.
   * Never for a balance, a gate or anything that decides money.
   */
  replica?: boolean;
};

/** Carries a 5xx answer out of an atomic request's transaction, so that nothing of it commits. */
class RolledBack extends Error {
  constructor(readonly response: Response) {
    super('rolled back');
  }
}

/** Carries a refusal out of an atomic request's transaction that the database had aborted. */
class Refused extends Error {
  constructor(readonly response: Response) {
    super('refused');
  }
}

type Claim = { companyId: string; key: string; method: string; path: string; rawBody: string };

type Auth = 'company' | 'admin' | 'none';

export function newRequestId(): string {
  return `req_${randomBytes(12).toString('base64url')}`;
}

export function errorResponse(err: ApiError, requestId: string): Response {
  return json(errorEnvelope(err, requestId), err.status, { 'Request-Id': requestId, ...err.headers });
}

function json(body: unknown, status: number, headers: Record<string, string>): Response {
  return new Response(stringifyJson(body), {
    status,
    headers: { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store', ...headers },
  });
}

function parseWith<T>(schema: z.ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value, parseOptions);
  if (result.success) return result.data;
  const { message, param } = describeIssue(result.error.issues[0]);
  throw new ApiError('invalid_request', message, param);
}

function queryObject(url: URL): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of url.searchParams) out[k] = v;
  return out;
}

function linkHeader(url: URL, after: string): string {
  const next = new URL(url);
  next.searchParams.set('starting_after', after);
  return `<${next.pathname}${next.search}>; rel="next"`;
}

function build<C, B, Q, P>(auth: Auth, opts: Options<B, Q, P>, handler: (ctx: C) => Promise<Reply | Response>) {
  return observed(auth === 'admin', async (req: Request, context: RouteContext, seen: Seen): Promise<Response> => {
    const requestId = newRequestId();
    let idem: { companyId: string; key: string; token: string; held: KeyHold } | null = null;
    let db: Db | null = null;
    let releaseSlot: (() => void) | null = null;
    try {
      const database = await getDatabase();
      db = database.db;
      const url = new URL(req.url);
      refuseCrossSite(req, auth);
      let company: Company | undefined;
      if (auth === 'company') {
        // Callers without a usable address share one budget.
        const address = clientAddress(req.headers) ?? 'unknown';
        checkAuthFailures(address);
        try {
          company = await authenticateCompany(db, req.headers.get('authorization'), now().getTime());
        } catch (err) {
          if (err instanceof ApiError && err.type === 'unauthorized') recordAuthFailure(address);
          throw err;
        }
        seen.companyId = company.id;
        checkRateLimit(company.id);
        releaseSlot = holdCompanySlot(company.id);
      } else if (auth === 'admin') {
        authenticateAdmin(req.headers.get('authorization'));
      }
      const reads = req.method !== 'GET' && req.method !== 'DELETE' && req.method !== 'HEAD';
      // Callers without a usable address share one bucket.
      if (auth === 'none' && reads) checkAddressRateLimit(clientAddress(req.headers) ?? 'unknown');
      const rawParams = (await context.params) ?? {};
      const params: Record<string, string> = {};
      // Next.js hands over path parameters already decoded: decoding again would turn %2541 into A.
      for (const [k, v] of Object.entries(rawParams)) params[k] = Array.isArray(v) ? v.join('/') : v;
      checkStorable(params);

      let body: unknown = undefined;
      let inexact = false;
      let raw = '';
      if (reads) {
        raw = (await readBoundedBody(req, auth === 'none' ? PUBLIC_MAX_BODY : MAX_BODY)).toString('utf8');
        if (raw.trim()) {
          const type = req.headers.get('content-type') ?? '';
          if (!/^application\/([\w.+-]+\+)?json\b/i.test(type)) {
            throw new ApiError('unsupported_media_type', 'Send request bodies as JSON with Content-Type: application/json.');
          }
          try {
            ({ value: body, inexact } = parseJsonBody(raw));
          } catch {
            throw new ApiError('invalid_request', 'The request body is not valid JSON.');
          }
          checkStorable(body);
        }
      }
      if (opts.maxItems !== undefined && Array.isArray(body) && body.length > opts.maxItems) {
        throw new ApiError('payload_too_large', `Send at most ${opts.maxItems} items per call; this one has ${body.length}.`);
      }
      let parsedBody: unknown = undefined;
      if (opts.body) {
        if (body === undefined && !opts.optionalBody) body = opts.body instanceof z.ZodArray ? undefined : {};
        parsedBody = body === undefined && opts.optionalBody ? undefined : parseWith(opts.body, body);
        if (inexact) refuseInexact(parsedBody);
      } else if (body !== undefined && !(typeof body === 'object' && body && Object.keys(body).length === 0)) {
        throw new ApiError('invalid_request', 'This call takes no request body.');
      }
      const query = opts.query ? queryObject(url) : undefined;
      if (query) checkStorable(query);
      const parsedQuery = opts.query ? parseWith(opts.query, query) : undefined;

      const key = req.headers.get('idempotency-key') ?? req.headers.get('x-dedupeid');
      let prepared: unknown = undefined;
      const respond = async (handlerDb: Db): Promise<Response> => {
        const ctx = {
          req,
          requestId,
          params,
          body: parsedBody,
          query: parsedQuery,
          db: handlerDb,
          dbKind: database.kind,
          company,
          idempotencyKey: key,
          prepared,
        } as unknown as C;
        const result = await handler(ctx);
        if (result instanceof Response) {
          result.headers.set('Request-Id', requestId);
          return result;
        }
        const headers: Record<string, string> = { 'Request-Id': requestId, ...result.headers };
        if (result.nextAfter) headers.Link = linkHeader(url, result.nextAfter);
        const body = result.hasMore === undefined ? { data: result.data } : { data: result.data, has_more: result.hasMore };
        return json(body, result.status ?? 200, headers);
      };

      // Every method that changes something honours the key (PUTs charge money too). The
      // operator's keys live in a namespace of their own. Elsewhere the key means nothing, so
      // it is not checked either.
      const scope = company?.id ?? (auth === 'admin' ? OPERATOR_SCOPE : null);
      const keyed = scope !== null && key !== null && req.method !== 'GET' && req.method !== 'HEAD';
      if (keyed && (key.length < 1 || key.length > 255)) {
        throw new ApiError('invalid_request', 'Idempotency-Key must be 1 to 255 characters.', 'Idempotency-Key');
      }
      // Once every check of the request has passed: a replay still makes it (its stored answer
      // is found by the claim, which comes after).
      if (opts.prepare) prepared = await opts.prepare(parsedBody as B);
      if (keyed) {
        const claim = { companyId: scope, key, method: req.method, path: url.pathname.replace(/^\/v1(?=\/)/, ''), rawBody: raw };
        const atomic = typeof opts.atomic === 'function' ? opts.atomic(parsedBody as B) : opts.atomic === true;
        if (atomic) return await respondAtomically(db, claim, requestId, respond);
        const token = randomBytes(12).toString('base64url');
        const stored = await claimIdempotencyKey(db, { ...claim, now: now(), token });
        if (stored) return replay(stored, requestId);
        idem = { companyId: scope, key, token, held: holdWhileRunning(db, scope, key, token) };
      }

      const response = opts.replica && !keyed ? await readOnReplica(respond) : await respond(db);
      if (idem) {
        await idem.held.stop();
        await finishIdempotencyKey(db, idem.companyId, idem.key, await storable(response), idem.token);
      }
      return response;
    } catch (err) {
      const response = errorResponse(err instanceof ApiError ? err : internal(err, requestId), requestId);
      if (idem && db) {
        const { held, companyId, key, token } = idem;
        await held
          .stop()
          .then(async () => finishIdempotencyKey(db!, companyId, key, await storable(response), token))
          .catch(() => {});
      }
      return response;
    } finally {
      releaseSlot?.();
    }
  });
}

type KeyHold = { stop: () => Promise<void> };

/**
 * Renews a running request's Idempotency-Key (claimed under `token`) every third of the
 * abandonment time, so a retry while it runs, however long, is told to wait instead of running
 * it again. `stop` ends the renewals once any under way has ended.
 */
function holdWhileRunning(db: Db, companyId: string, key: string, token: string): KeyHold {
  let stopped = false;
  let renewal: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    timer = setTimeout(() => {
      renewal = holdIdempotencyKey(db, companyId, key, token)
        // Not held: taken over after this request fell silent; nothing more to renew.
        .then((held) => {
          if (held && !stopped) schedule();
        })
        .catch(() => {
          if (!stopped) schedule();
        });
    }, idempotencyTiming.abandonedMs / 3);
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await renewal;
    },
  };
}

/**
 * The API is called by servers. A browser that once took Basic credentials for this origin sends
 * them with another site's form POST too (a simple request: no preflight), and that page could
 * then act with the key; browsers name such requests with `Sec-Fetch-Site`, servers send none.
 */
function refuseCrossSite(req: Request, auth: Auth): void {
  if (auth === 'none' || req.method === 'GET' || req.method === 'HEAD') return;
  const site = req.headers.get('sec-fetch-site');
  if (site === 'cross-site' || site === 'same-site') {
    throw new ApiError('invalid_request', 'This API is called from servers: a page of another site cannot call it (Sec-Fetch-Site). Keep API keys on your backend.');
  }
}

/** The answer as a key keeps it: one that asks to be retried (Retry-After) is not kept. */
async function storable(response: Response): Promise<Stored> {
  return { status: response.status, body: await response.clone().text(), retry: response.headers.has('retry-after') };
}

function replay(stored: Stored, requestId: string): Response {
  return new Response(stored.body, {
    status: stored.status,
    headers: { 'Content-Type': 'application/json; charset=utf-8', 'Request-Id': requestId, 'Idempotent-Replayed': 'true' },
  });
}

/**
 * Claims the key, runs the handler and stores its answer in one transaction (the handler's own
 * transactions become savepoints of it). A refusal (4xx) is stored with whatever the handler
 * wrote before refusing (a gated event is recorded as rejected); a server error commits nothing,
 * the key included, so the retry runs afresh. A second request with the key waits for the first
 * to commit and replays its answer.
 */
async function respondAtomically(db: Db, claim: Claim, requestId: string, respond: (db: Db) => Promise<Response>): Promise<Response> {
  try {
    return await db.transaction(async (tx) => {
      const stored = await claimIdempotencyKey(tx, { ...claim, now: now() });
      if (stored) return replay(stored, requestId);
      let response: Response;
      let refused = false;
      try {
        response = await respond(tx);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        response = errorResponse(err, requestId);
        refused = true;
      }
      // A server error, or an answer that asks to be retried, commits nothing, the key included.
      if (response.status >= 500 || response.headers.has('retry-after')) throw new RolledBack(response);
      try {
        await finishIdempotencyKey(tx, claim.companyId, claim.key, await storable(response));
      } catch (err) {
        // The handler refused over a statement that failed (a unique violation it answers with
        // 409): PostgreSQL has aborted the transaction, so nothing of it can commit.
        if (refused) throw new Refused(response);
        throw err;
      }
      return response;
    });
  } catch (err) {
    if (err instanceof RolledBack) return err.response;
    if (err instanceof Refused) return storeRefusal(db, claim, requestId, err.response);
    throw err;
  }
}

/** Stores a refusal whose request wrote nothing, so that a retry with the key replays it. */
async function storeRefusal(db: Db, claim: Claim, requestId: string, response: Response): Promise<Response> {
  return db.transaction(async (tx) => {
    const stored = await claimIdempotencyKey(tx, { ...claim, now: now() });
    if (stored) return replay(stored, requestId);
    await finishIdempotencyKey(tx, claim.companyId, claim.key, { status: response.status, body: await response.clone().text() });
    return response;
  });
}

function internal(err: unknown, requestId: string): ApiError {
  if (isDatabaseUnavailable(err)) return unavailable(err, requestId);
  log.error({ request_id: requestId, err }, 'request failed');
  return new ApiError('internal', 'Something went wrong on our side. Retry later; quote the request id if it persists.');
}

/**
 * The database went away under the request, or no host takes writes (a failover under way): a
 * 503 the caller retries, never a 500. A keyed request's key is not kept with it (Retry-After),
 * so the retry runs afresh or replays what committed.
 */
export function unavailable(err: unknown, requestId: string): ApiError {
  log.warn({ request_id: requestId, reason: unavailableReason(err) }, 'request met an unavailable database; answered 503');
  return new ApiError(
    'service_unavailable',
    'The database cannot be reached right now (a switch to a standby may be under way). Retry in a moment: with the same Idempotency-Key the request is applied at most once.',
    null,
    {},
    { 'Retry-After': '1' },
  );
}

export type CompanyCtx<B, Q, P = undefined> = Base<B, Q, P> & { company: Company };

/** A route for company backends: Basic auth with company id and API key. */
export function withCompany<B = undefined, Q = undefined, P = undefined>(opts: Options<B, Q, P>, handler: (ctx: CompanyCtx<B, Q, P>) => Promise<Reply | Response>) {
  return build<CompanyCtx<B, Q, P>, B, Q, P>('company', opts, handler);
}

/** A route for the operator: `Authorization: Bearer <ADMIN_TOKEN>`; 404 when no token is configured. */
export function withAdmin<B = undefined, Q = undefined, P = undefined>(opts: Options<B, Q, P>, handler: (ctx: Base<B, Q, P>) => Promise<Reply | Response>) {
  return build<Base<B, Q, P>, B, Q, P>('admin', opts, handler);
}

/**
 * A route without authentication (health, the collector's own calls). Calls that send a body are
 * limited per client address (see checkAddressRateLimit) and take at most 64 KiB.
 */
export function withPublic<B = undefined, Q = undefined, P = undefined>(opts: Options<B, Q, P>, handler: (ctx: Base<B, Q, P>) => Promise<Reply | Response>) {
  return build<Base<B, Q, P>, B, Q, P>('none', opts, handler);
}

type Handler = (req: Request, context: RouteContext) => Promise<Response>;

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
type Method = (typeof METHODS)[number];

/** A marked handler for the methods a path does not support (listRoutes and the OpenAPI test skip it). */
type NotAllowed = Handler & { notAllowed: true };

/**
 * A route file's methods, declared once: `export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } =
 * declareMethods({ POST: withCompany(...) })`. Every method left out answers in the error shape
 * with a Request-Id and `Allow` (like an unknown path: 404) instead of the framework's bare 405;
 * OPTIONS answers 204 with the same `Allow` and a Request-Id.
 */
export function declareMethods<H extends Partial<Record<Method, (req: Request, context: never) => Promise<Response>>>>(
  handlers: H,
): H & Record<Exclude<Method, keyof H>, NotAllowed> & { OPTIONS: Handler } {
  const allowed = [...METHODS.filter((m) => handlers[m]), 'OPTIONS'].join(', ');
  const notAllowed = Object.assign(
    observed(false, async (req) =>
      errorResponse(
        new ApiError('not_found', `${req.method} is not supported on ${new URL(req.url).pathname}; it answers ${allowed}.`, null, {}, { Allow: allowed }),
        newRequestId(),
      ),
    ),
    { notAllowed: true as const },
  );
  const OPTIONS = observed(false, async () => new Response(null, { status: 204, headers: { Allow: allowed, 'Request-Id': newRequestId() } }));
  return { ...Object.fromEntries(METHODS.map((m) => [m, handlers[m] ?? notAllowed])), OPTIONS } as H & Record<Exclude<Method, keyof H>, NotAllowed> & { OPTIONS: Handler };
}
