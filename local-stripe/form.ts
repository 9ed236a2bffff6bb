/**
 * Parser for Stripe's `application/x-www-form-urlencoded` request encoding.
 *
 * The SDK (and Stripe.js) flatten nested params with bracket notation:
 *   metadata[account_id]=a_1
 *   invoice_settings[default_payment_method]=pm_1
 *   expand[0]=customer&expand[1]=latest_charge
 *   billing_details[address][line1]=1%20Main%20St
 * `parseForm` turns that back into nested objects and arrays. GET/DELETE
 * requests carry the same encoding in the query string (`parseQuery`).
 *
 * Arrays: a path segment that is a non-negative integer (`expand[0]`) or empty
 * (`expand[]`) makes an array. An object whose keys are all integers is turned
 * into an array (ordered by index, gaps dropped), except under `metadata`,
 * whose keys are free-form strings even when they look like numbers.
 */

export type FormValue = string | FormValue[] | FormObject;
export interface FormObject {
  [key: string]: FormValue;
}

/** Raised for bodies Stripe would reject as malformed (answered as a 400). */
export class FormParseError extends Error {
  constructor(
    message: string,
    readonly param?: string,
  ) {
    super(message);
    this.name = 'FormParseError';
  }
}

/** Parent keys whose children are never converted to arrays. */
const FREE_FORM_KEYS = new Set(['metadata']);

/** Marker for `key[]=` segments while building (replaced by a real index). */
const PUSH = Symbol('push');
type Segment = string | typeof PUSH;

// Interim tree: plain objects only; arrays are produced at the end.
interface Node {
  [key: string]: string | Node;
}

function decode(component: string): string {
  try {
    return decodeURIComponent(component.replace(/\+/g, ' '));
  } catch {
    throw new FormParseError(`Invalid URL encoding: ${component.slice(0, 50)}`);
  }
}

/** `a[b][0][]` → ['a', 'b', '0', PUSH]; a key with unbalanced brackets is taken literally. */
function splitKey(key: string): Segment[] {
  const open = key.indexOf('[');
  if (open <= 0) return [key];
  const segments: Segment[] = [key.slice(0, open)];
  const rest = key.slice(open);
  const re = /\[([^[\]]*)\]/g;
  let consumed = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(rest)) !== null) {
    if (m.index !== consumed) return [key];
    segments.push(m[1] === '' ? PUSH : m[1]);
    consumed = re.lastIndex;
  }
  if (consumed !== rest.length) return [key];
  return segments;
}

function assertSafeKey(segment: string, fullKey: string): void {
  // Plain objects are used for the result, so refuse keys that would reach the prototype.
  if (segment === '__proto__' || segment === 'constructor' || segment === 'prototype') {
    throw new FormParseError(`Invalid parameter name: ${fullKey}`, fullKey);
  }
}

function insert(root: Node, fullKey: string, segments: Segment[], value: string): void {
  let node = root;
  for (let i = 0; i < segments.length; i++) {
    const raw = segments[i];
    const last = i === segments.length - 1;
    // `[]` appends: the next free integer index in this node.
    const segment = raw === PUSH ? String(nextIndex(node)) : raw;
    assertSafeKey(segment, fullKey);
    const existing = Object.prototype.hasOwnProperty.call(node, segment) ? node[segment] : undefined;
    if (last) {
      if (typeof existing === 'object') {
        throw new FormParseError(`Invalid parameter: ${fullKey} is both a value and a hash`, fullKey);
      }
      node[segment] = value; // repeated scalar keys: the last one wins
      return;
    }
    if (typeof existing === 'string') {
      throw new FormParseError(`Invalid parameter: ${fullKey} is both a value and a hash`, fullKey);
    }
    if (existing === undefined) {
      const child: Node = {};
      node[segment] = child;
      node = child;
    } else {
      node = existing;
    }
  }
}

function nextIndex(node: Node): number {
  let max = -1;
  for (const k of Object.keys(node)) {
    if (/^\d+$/.test(k)) max = Math.max(max, Number(k));
  }
  return max + 1;
}

function finalize(node: Node, parentKey: string | null): FormObject | FormValue[] {
  const keys = Object.keys(node);
  const out: FormObject = {};
  for (const k of keys) {
    const v = node[k];
    out[k] = typeof v === 'string' ? v : finalize(v, k);
  }
  const isArray =
    parentKey !== null &&
    !FREE_FORM_KEYS.has(parentKey) &&
    keys.length > 0 &&
    keys.every((k) => /^\d+$/.test(k) && k.length < 10);
  if (!isArray) return out;
  return keys
    .map(Number)
    .sort((a, b) => a - b)
    .map((k) => out[String(k)]);
}

/** Parses a form-encoded body (or query string without the leading `?`). */
export function parseForm(input: string): FormObject {
  const root: Node = {};
  if (!input) return {};
  for (const pair of input.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const rawKey = eq === -1 ? pair : pair.slice(0, eq);
    const rawValue = eq === -1 ? '' : pair.slice(eq + 1);
    const key = decode(rawKey);
    if (key === '') continue;
    insert(root, key, splitKey(key), decode(rawValue));
  }
  const result = finalize(root, null);
  // The top level is always an object (finalize only makes arrays below the root).
  return Array.isArray(result) ? {} : result;
}

/** Parses `?a=1&b[c]=2` (leading `?` optional) the same way as a body. */
export function parseQuery(search: string): FormObject {
  return parseForm(search.startsWith('?') ? search.slice(1) : search);
}

/**
 * Inverse of parseForm, producing the same encoding the SDK sends
 * (indexed arrays, unencoded brackets). Used by tests and the stand-in.
 */
export function encodeForm(params: Record<string, unknown>): string {
  const pairs: string[] = [];
  const enc = (s: string) => encodeURIComponent(s).replace(/%5B/g, '[').replace(/%5D/g, ']');
  const walk = (key: string, value: unknown): void => {
    if (value === undefined) return;
    if (value === null || typeof value !== 'object') {
      pairs.push(`${enc(key)}=${enc(value === null ? '' : String(value))}`);
    } else if (Array.isArray(value)) {
      value.forEach((v, i) => walk(`${key}[${i}]`, v));
    } else {
      for (const [k, v] of Object.entries(value)) walk(`${key}[${k}]`, v);
    }
  };
  for (const [k, v] of Object.entries(params)) walk(k, v);
  return pairs.join('&');
}
