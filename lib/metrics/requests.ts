import { performance } from 'node:perf_hooks';
import { log } from '../log';
import { metrics } from './registry';

type Params = Record<string, string | string[]>;
type RouteContext = { params: Promise<Params> } | undefined;

/** What the handler learnt about a request that the access log shows: the authenticated company. */
export type Seen = { companyId?: string };

// The paths next.config.mjs rewrites to /v1 (the API answers with or without the prefix); a
// test checks the two lists agree on every route.
const UNPREFIXED = /^\/(accounts|events|grants|webhooks|companies|plans|portal_links|test_clock|openapi\.json)(\/|$)/;

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * The route a request matched, as a pattern (`/v1/accounts/{account_id}/events`), never the raw
 * path: ids and tokens stay out of logs and metric labels, and the labels stay few. Each path
 * parameter replaces the segment holding its value, from the right (the parameters users name,
 * denominations and topics, come after the generated ids); a catch-all takes the segments left.
 */
export function routePattern(pathname: string, params: Params = {}): string {
  const segments = pathname.split('/');
  let end = segments.length;
  for (const [name, value] of Object.entries(params).reverse()) {
    if (Array.isArray(value)) {
      const start = Math.max(1, end - value.length);
      segments.splice(start, end - start, `{${name}}`);
      end = start;
      continue;
    }
    for (let i = end - 1; i >= 1; i--) {
      if (decode(segments[i]) === value) {
        segments[i] = `{${name}}`;
        end = i;
        break;
      }
    }
  }
  const pattern = segments.join('/') || '/';
  return UNPREFIXED.test(pattern) ? `/v1${pattern}` : pattern;
}

export type RequestRecord = {
  method: string;
  route: string;
  status: number;
  seconds: number;
  requestId: string | null;
  companyId: string | null;
  /** Probes and scrapes come every few seconds from the orchestrator: they log at debug. */
  quiet?: boolean;
};

/** The access log line and the request metrics of one answered request. */
export function recordRequest(r: RequestRecord): void {
  const labels = { method: r.method, route: r.route, status: String(r.status) };
  const m = metrics();
  m.httpRequests.inc(labels);
  m.httpDuration.observe(labels, r.seconds);
  const line = {
    request_id: r.requestId,
    company_id: r.companyId,
    method: r.method,
    route: r.route,
    status: r.status,
    duration_ms: Math.round(r.seconds * 1e5) / 100,
  };
  if (r.quiet) log.debug(line, `${r.method} ${r.route} ${r.status}`);
  else log.info(line, `${r.method} ${r.route} ${r.status}`);
}

/**
 * Wraps a route handler: times it and records the answer (access log and metrics), with the
 * request id it answered with and the company it authenticated (or, for the operator's calls, the
 * company in the path).
 */
export function observed(operator: boolean, handle: (req: Request, context: NonNullable<RouteContext>, seen: Seen) => Promise<Response>, quiet = false) {
  return async (req: Request, context: NonNullable<RouteContext>): Promise<Response> => {
    const started = performance.now();
    const seen: Seen = {};
    const response = await handle(req, context, seen);
    let params: Params = {};
    try {
      params = ((await context?.params) ?? {}) as Params;
    } catch {
      /* no parameters */
    }
    const fromPath = operator && typeof params.company_id === 'string' ? params.company_id : undefined;
    recordRequest({
      method: req.method,
      route: routePattern(new URL(req.url).pathname, params),
      status: response.status,
      seconds: (performance.now() - started) / 1000,
      requestId: response.headers.get('request-id'),
      companyId: seen.companyId ?? fromPath ?? null,
      quiet,
    });
    return response;
  };
}
