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
const URL_ATTRIBUTES = ['http.target', 'http.url', 'url.full', 'url.path', 'url.query'];

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
  const names = query === null ? '' : `?${query.split('&').filter(Boolean).map((p) => p.split('=')[0]).join('&')}`;
  return origin + path + names;
}

/** Rewrites the URL attributes and a name that holds a URL; leaves the span otherwise as it is. */
function redactSpan(span: Span): void {
  for (const key of URL_ATTRIBUTES) {
    const value = span.attributes[key];
    if (typeof value === 'string') {
      const clean = redactTarget(value);
      if (clean !== value) span.setAttribute(key, clean);
    }
  }
  // Fetch spans are named `fetch <METHOD> <url>`.
  const named = /^(\S+ \S+ )(\S+:\/\/\S+)$/.exec(span.name);
  if (named) {
    const clean = named[1] + redactTarget(named[2]);
    if (clean !== span.name) span.updateName(clean);
  }
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
