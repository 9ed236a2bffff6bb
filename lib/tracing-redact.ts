import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace';

/**
 * What a span may say about a request's address. Next.js puts the raw request target on its
 * request span (`http.target`) and the full URL on its fetch spans (`http.url`, and the span's
 * name): a hosted page's bearer token (`/collect/<token>`, `/portal/<token>`), the console's
 * search terms in the query, or credentials in a URL would otherwise go to the trace backend,
 * which the logs and metric labels never see (they carry the route pattern).
 */
const TOKEN_PATH = /^(\/(?:v1\/)?(?:collect|portal)\/)[^/?#]+/;
const URL_ATTRIBUTES = ['http.target', 'http.url', 'url.full', 'url.path'];
/** Attributes that hold a span name (Next.js copies its spans' first names into `next.span_name`). */
const NAME_ATTRIBUTES = ['next.span_name'];

/** A query string (without its `?`) with its values left out: `a=1&b=2` reads `a&b`. */
export function redactQuery(query: string): string {
  return query
    .split('&')
    .filter(Boolean)
    .map((p) => p.split('=')[0])
    .join('&');
}

/** A span name that ends in a URL (`fetch GET https://…`) with the URL redacted; any other name as it is. */
export function redactName(name: string): string {
  const named = /^(\S+ \S+ )(\S+:\/\/\S+)$/.exec(name);
  return named ? named[1] + redactTarget(named[2]) : name;
}

/** A request target or URL with a hosted page's token replaced, no query values, and no credentials. */
export function redactTarget(value: string): string {
  let rest = value;
  let origin = '';
  const absolute = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)/i.exec(value);
  if (absolute) {
    // user:password@ goes; the host stays.
    origin = absolute[1] + absolute[2].replace(/^.*@/, '');
    rest = value.slice(absolute[0].length);
  }
  const hash = rest.indexOf('#');
  if (hash >= 0) rest = rest.slice(0, hash);
  const q = rest.indexOf('?');
  let path = q >= 0 ? rest.slice(0, q) : rest;
  const query = q >= 0 ? rest.slice(q + 1) : null;
  path = path.replace(TOKEN_PATH, '$1[token]');
  // Parameter names stay (they tell what was asked), their values do not.
  const names = query === null ? '' : `?${redactQuery(query)}`;
  return origin + path + names;
}

/** Rewrites the URL attributes and a name that holds a URL; leaves the span otherwise as it is. */
function redactSpan(span: Span): void {
  const rewrite = (key: string, clean: (value: string) => string) => {
    const value = span.attributes[key];
    if (typeof value !== 'string') return;
    const cleaned = clean(value);
    if (cleaned !== value) span.setAttribute(key, cleaned);
  };
  for (const key of URL_ATTRIBUTES) rewrite(key, redactTarget);
  rewrite('url.query', redactQuery);
  for (const key of NAME_ATTRIBUTES) rewrite(key, redactName);
  // Fetch spans are named `fetch <METHOD> <url>`.
  const name = redactName(span.name);
  if (name !== span.name) span.updateName(name);
}

/**
 * Placed before the exporting processor: cleans each span when it starts (Next.js sets the
 * request target then) and again as it ends, before any exporter reads it.
 */
export class RedactingSpanProcessor implements SpanProcessor {
  onStart(span: Span, _parentContext: Context): void {
    redactSpan(span);
  }
  onEnding(span: Span): void {
    redactSpan(span);
  }
  onEnd(_span: ReadableSpan): void {}
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}
