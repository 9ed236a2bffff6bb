import fc from 'fast-check';
import type { Json } from '../api/openapi/document';
import { resolveRef } from '../api/openapi/json-schema-check';

/**
 * Requests for the operations of the OpenAPI document, generated from its schemas and then
 * mutated the ways an attacker or a careless client would. A request is plain data: ids are
 * `IdRef`s, resolved against the companies' live pools only when it is sent, and mutations are
 * descriptions applied at send time, so a failing request prints as what was done and replays
 * from the same seed.
 */

/** A JSON literal written exactly as given (`1e400`, `-0`, deep nesting), not through JSON.stringify. */
export class RawJson {
  constructor(readonly text: string) {}
  toString() {
    return this.text.length > 80 ? `RawJson(${this.text.slice(0, 40)}…${this.text.length} chars)` : `RawJson(${this.text})`;
  }
}

export type Owner = 'A' | 'B' | 'unknown';
/** An id of some kind: one of company A's or B's (by index into its pool), or a well-formed id that exists nowhere. */
export class IdRef {
  constructor(
    readonly kind: string,
    readonly owner: Owner,
    readonly pick: number,
  ) {}
  toString() {
    return `IdRef(${this.kind},${this.owner},${this.pick})`;
  }
}

/** A long string built at send time, so counterexamples stay readable. */
export class Long {
  constructor(
    readonly unit: string,
    readonly times: number,
  ) {}
  value() {
    return this.unit.repeat(this.times);
  }
  toString() {
    return `Long(${JSON.stringify(this.unit)}x${this.times})`;
  }
}

export type Mutation =
  | { m: 'field'; at: number; nasty: number }
  | { m: 'wrong-type'; at: number }
  | { m: 'drop'; at: number }
  | { m: 'extra'; at: number; key: number; nasty: number }
  | { m: 'deep'; at: number; depth: number; shape: 'array' | 'object' }
  | { m: 'content-type'; which: number }
  | { m: 'break-json'; which: number }
  | { m: 'body-shape'; which: number }
  | { m: 'huge-body' }
  | { m: 'path'; param: number; nasty: number }
  | { m: 'query'; param: number; nasty: number }
  | { m: 'query-extra'; key: number; nasty: number }
  | { m: 'header'; which: number }
  | { m: 'foreign'; at: number };

export type Auth = 'A' | 'B' | 'none' | 'wrong-key' | 'cross-key' | 'garbage' | 'admin' | 'admin-wrong';

export type RequestSpec = {
  op: string;
  auth: Auth;
  path: Record<string, unknown>;
  query: [string, unknown][];
  idempotencyKey: string | null;
  /** undefined: no body. */
  body: unknown;
  mutations: Mutation[];
};

export type FuzzOperation = { key: string; method: string; path: string; op: Json; auth: 'company' | 'admin' | 'public' };

/** Every operation of the document, keyed `METHOD /path`. */
export function operationsOf(doc: Json): FuzzOperation[] {
  const out: FuzzOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item)) {
      const security = (op.security ?? []) as Json[];
      const auth = security.some((s) => 'basicAuth' in s) ? 'company' : security.some((s) => 'operatorBearer' in s) ? 'admin' : 'public';
      out.push({ key: `${method.toUpperCase()} ${path}`, method: method.toUpperCase(), path, op, auth });
    }
  }
  return out;
}

export const ID_KINDS: Record<string, string> = {
  company_id: 'c',
  account_id: 'a',
  plan_id: 'p',
  event_id: 'ev',
  webhook_id: 'w',
  delivery_id: 'whd',
  key_id: 'key',
  grant_id: 'cg',
  portal_link_id: 'pl',
};
const KINDS = ['c', 'a', 'p', 'ev', 'w', 'whd', 'key', 'cg', 'pl'];
export const DENOMINATIONS = ['credits', 'tokens', 'seats', 'storage-GB', 'compute.minute'];
const WORDS = ['query', 'chat', 'export', 'Ada', 'Pro', 'x', 'billing', 'render', 'upload'];
const TOKENS = ['tok_visa', 'tok_mastercard', 'tok_chargeDeclined', 'tok_chargeDeclinedInsufficientFunds', 'tok_bogus', 'pm_card_visa'];
/** Receivers that refuse connections at once: nothing generated here ever names a host outside this machine. */
const URLS = ['http://127.0.0.1:9/hook', 'http://127.0.0.1:9/by-type?x=1', 'http://[::1]:9/hook', 'https://127.0.0.1:9/secure'];

const idRef = (kind: string) =>
  fc
    .tuple(fc.constantFrom<Owner>('A', 'A', 'A', 'A', 'A', 'A', 'B', 'unknown'), fc.oneof(fc.constant(0), fc.nat(1000)))
    .map(([owner, pick]) => new IdRef(kind, owner, pick));

const word = fc.oneof(fc.constantFrom(...WORDS), fc.stringMatching(/^[a-z][a-z0-9_-]{0,11}$/));
const email = fc.oneof(fc.constantFrom('ada@example.com', 'bob@acme.test', 'Billing+1@Example.COM'), word.map((w) => `${w.replace(/[^a-z0-9]/g, '') || 'x'}@example.com`));
const unitsValue = fc.oneof(
  fc.integer({ min: 1, max: 2000 }),
  fc.integer({ min: 0, max: 50 }),
  fc.constantFrom('0.5', '2.25', '10', '0.000000000001', '1000', 4.5, 0.1),
);
const centsValue = fc.oneof(fc.integer({ min: 0, max: 5000 }), fc.constantFrom(0, 50, 2500, '2500', 99_999_999));

/** A value for one schema; `name` is the property it sits in (ids, urls and card tokens are chosen by name). */
export function valueFor(doc: Json, schema: Json, name: string, depth = 0): fc.Arbitrary<unknown> {
  if (schema.$ref) return valueFor(doc, resolveRef(doc, schema.$ref)!, name, depth);
  if ('const' in schema) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...(schema.enum as unknown[]));
  if (schema.anyOf) return fc.oneof(...(schema.anyOf as Json[]).map((s) => valueFor(doc, s, name, depth)));
  const hinted = hint(schema, name);
  if (hinted) return hinted;
  const types: string[] = schema.type === undefined ? ['any'] : [].concat(schema.type);
  return fc.oneof(...types.map((type) => byType(doc, schema, type, name, depth)));
}

function hint(schema: Json, name: string): fc.Arbitrary<unknown> | null {
  const prefix = typeof schema.pattern === 'string' ? /^\^(\w+)_\[A-Za-z0-9\]\+\$$/.exec(schema.pattern)?.[1] : undefined;
  if (prefix) return idRef(prefix);
  if (ID_KINDS[name]) return idRef(ID_KINDS[name]);
  if (name === 'starting_after') return fc.oneof(...KINDS.map(idRef));
  if (schema.pattern === '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$' || name === 'denomination') return fc.oneof(fc.constantFrom(...DENOMINATIONS), fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,10}$/));
  if (schema.format === 'email' || name === 'email') return email;
  if (name === 'url') return fc.constantFrom(...URLS);
  if (name === 'token') return fc.constantFrom(...TOKENS);
  if (name === 'processor_id') return fc.constantFrom('cus_missing', 'cus_123');
  if (name === 'processor_key') return fc.nat(999).map((n) => `sk_test_fuzz${n}`);
  if (name === 'processor_publishable_key') return fc.nat(999).map((n) => `pk_test_fuzz${n}`);
  if (name === 'password') return fc.constantFrom('correct horse battery', 's3cret-pass', 'p');
  if (name === 'seconds') return fc.integer({ min: 0, max: 3600 });
  if (name === 'billing_period') return fc.constantFrom('month', 'day', 'week', 'year', 'Monthly', 'annually');
  if (name === 'charge_denomination' || name === 'overage_charge_denomination') return fc.constantFrom('USD', 'usd');
  if (name === 'threshold_alert_percentage') return fc.oneof(fc.integer({ min: 1, max: 100 }), fc.constant('80'), fc.constant(null));
  if (name === 'type') return word;
  if (name === 'limit') return fc.integer({ min: 1, max: 1000 });
  if (schema.format === 'date-time') return fc.integer({ min: -30, max: 30 }).map((d) => new Date(Date.now() + d * 86_400_000).toISOString());
  const types: unknown[] = [].concat(schema.type ?? []);
  if (types.includes('number') && types.includes('string')) {
    return /USD cents/.test(schema.description ?? '') ? centsValue : unitsValue;
  }
  return null;
}

function byType(doc: Json, schema: Json, type: string, name: string, depth: number): fc.Arbitrary<unknown> {
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer': {
      const min = schema.minimum ?? 0;
      return fc.integer({ min, max: Math.min(schema.maximum ?? min + 1000, min + 1000) });
    }
    case 'number':
      return fc.integer({ min: 0, max: 1000 });
    case 'string': {
      const min = schema.minLength ?? 0;
      const max = Math.min(schema.maxLength ?? 24, Math.max(min, 24));
      return fc.oneof(word.filter((w) => w.length >= min && w.length <= max), fc.string({ minLength: Math.max(min, 1), maxLength: max }));
    }
    case 'array': {
      const maxLength = Math.min(schema.maxItems ?? 3, 3);
      return fc.array(valueFor(doc, schema.items ?? {}, name, depth + 1), { minLength: Math.min(schema.minItems ?? 0, maxLength), maxLength });
    }
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, Json>;
      if (Object.keys(props).length) {
        // Optional fields come one time in three, so objects are mostly small and plausible.
        const required = new Set<string>(schema.required ?? []);
        const arbs = Object.fromEntries(
          Object.entries(props).map(([k, s]) => [k, required.has(k) ? valueFor(doc, s, k, depth + 1) : fc.option(valueFor(doc, s, k, depth + 1), { freq: 2, nil: undefined })]),
        );
        return fc.record(arbs).map((o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)));
      }
      if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
        const key = schema.propertyNames?.pattern ? fc.constantFrom(...DENOMINATIONS) : word;
        return fc.dictionary(key, valueFor(doc, schema.additionalProperties, name, depth + 1), { maxKeys: 3 });
      }
      return fc.dictionary(word, fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 });
    }
    default:
      return depth > 2 ? fc.constant('x') : fc.jsonValue({ maxDepth: 2 });
  }
}

/** Values no field expects: wrong types, extreme and exponent numbers, hostile strings. */
export const NASTY: unknown[] = [
  new RawJson('1e400'),
  new RawJson('-1e400'),
  new RawJson('1e-20'),
  new RawJson('-0'),
  new RawJson('1E+2'),
  new RawJson('0.30000000000000004'),
  new RawJson('123456789012345678901234567890'),
  new RawJson('1.0000000000000000001'),
  new RawJson('9007199254740993'),
  new RawJson('-1e-400'),
  1e308,
  -1,
  0,
  0.5,
  99_999_999,
  100_000_000,
  2 ** 53,
  -(2 ** 31),
  1e21,
  5e-324,
  '1e400',
  '1e-20',
  '-0',
  '0.0000000000001',
  '1.1234567890123',
  '12345678901234567890',
  '999999999999999999',
  '1e17',
  ' 1',
  '+1',
  '0x1F',
  'NaN',
  'Infinity',
  '-Infinity',
  '١٢٣',
  '1,5',
  '.5',
  '5.',
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'a\udc00b',
  '\u202eevil',
  '\ufeff',
  'ｆｕｌｌ',
  '🙂🙂🙂',
  'e\u0301',
  '\r\n',
  '\t\v\f\b',
  '\u2028\u2029',
  '\u001b[31m',
  "' or 1=1 --",
  '"; drop table accounts; --',
  '<script>alert(1)</script>',
  '%00',
  '../../etc/passwd',
  'null',
  'true',
  '[]',
  new Long('x', 300),
  new Long('x', 5000),
  new Long('é', 70_000),
  new Long('🙂', 1000),
  new Long('\u0000', 1000),
  null,
  true,
  false,
  [],
  {},
  [null],
  [[[]]],
  { '': '' },
  { a: { b: { c: [1, 'x', null] } } },
  new RawJson('{"__proto__":{"polluted":"yes"}}'),
  new RawJson('{"constructor":{"prototype":{"polluted":"yes"}}}'),
  new RawJson('{"prototype":{"polluted":"yes"},"toString":"x","valueOf":1}'),
];

/**
 * NASTY[i] as a fresh value: a body takes it in and later mutations of the same request may write
 * into it (or put it inside itself), which must not change the shared list for the requests after.
 */
export function nasty(i: number): unknown {
  return copyValue(NASTY[i]);
}

function copyValue(value: unknown): unknown {
  if (value instanceof RawJson || value instanceof Long) return value;
  if (Array.isArray(value)) return value.map(copyValue);
  if (value && typeof value === 'object') {
    const copy: Record<string, unknown> = {};
    for (const k of Object.keys(value)) setOwn(copy, k, copyValue((value as Record<string, unknown>)[k]));
    return copy;
  }
  return value;
}

export const EXTRA_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'extra', 'id', 'company_id', '', 'a\u0000b', 'x'.repeat(300)];

export const CONTENT_TYPES: (string | null)[] = [
  null,
  '',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'APPLICATION/JSON',
  'application/json; charset=utf-16',
  'application/problem+json',
  ' application/json',
  'json',
];

/** Ways to break a serialized JSON body. */
export const BREAK_JSON: ((text: string) => string | Uint8Array)[] = [
  (s) => s.slice(0, Math.max(1, Math.floor(s.length / 2))),
  (s) => `${s},`,
  (s) => s.replace(/"/g, "'"),
  (s) => `${s}garbage`,
  (s) => `\ufeff${s}`,
  () => 'NaN',
  () => '{"a":1,}',
  () => '{a:1}',
  () => '\u0000',
  (s) => `/* comment */${s}`,
  () => '{"name":"x","name":"y"}',
  (s) => new Uint8Array([0xff, 0xfe, ...Buffer.from(s)]),
  (s) => new Uint8Array([...Buffer.from(s.slice(0, -1)), 0xc3]),
  () => '"unterminated',
  () => '[' + '{'.repeat(5),
];

/** Whole bodies of the wrong shape. */
export const BODY_SHAPES: ((body: unknown) => unknown)[] = [
  () => [],
  (b) => [b],
  () => ({}),
  () => 'a string',
  () => 1,
  () => null,
  () => true,
  (b) => (Array.isArray(b) ? b[0] ?? {} : b),
  (b) => (Array.isArray(b) ? Object.fromEntries(b.map((x, i) => [String(i), x])) : b),
  () => new RawJson('[' + '['.repeat(2000) + ']'.repeat(2000) + ']'),
];

/** Path parameter values no route expects (in addition to other companies' and unknown ids). */
export const NASTY_PATH: string[] = [
  'a_',
  'a_!',
  'p_' + 'x'.repeat(5000),
  'null',
  '0',
  '-1',
  '1e400',
  ' ',
  "' or 1=1 --",
  'ünïcödé',
  '🙂',
  'e\u0301',
  '\u202e',
  'a\u0000b',
  '%',
  '%2F',
  'a/b',
  '?x=1',
  '#frag',
  '..%2F..',
  '__proto__',
  'constructor',
  'x'.repeat(300),
];

export const NASTY_QUERY: string[] = ['', '0', '-1', '-0', '1.5', '1e400', '1e-20', '1001', '100000000000000000000', 'abc', ' 1', '\u0000', '🙂', 'x'.repeat(5000), 'a_', '__proto__', 'true', '[]', '2031-02-30T00:00:00Z', 'not a date'];
export const EXTRA_QUERY_KEYS = ['foo', '__proto__', 'constructor', 'limit', 'starting_after', 'LIMIT', ''];

/** Header variants: Idempotency-Key shapes and authorization forms. */
export const HEADER_VARIANTS: { name: string; value: string | ((ctx: { cross: string }) => string) }[] = [
  { name: 'idempotency-key', value: '' },
  { name: 'idempotency-key', value: 'k'.repeat(256) },
  { name: 'idempotency-key', value: 'k'.repeat(255) },
  { name: 'idempotency-key', value: 'ünïcödé key' },
  { name: 'x-dedupeid', value: 'dedupe-1' },
  { name: 'x-dedupeid', value: '' },
  { name: 'authorization', value: 'Basic' },
  { name: 'authorization', value: 'Basic !!!not-base64!!!' },
  { name: 'authorization', value: `Basic ${Buffer.from('c_nobody').toString('base64')}` },
  { name: 'authorization', value: `Basic ${Buffer.from(':').toString('base64')}` },
  { name: 'authorization', value: 'Bearer x' },
  { name: 'authorization', value: `Basic ${'A'.repeat(8000)}` },
  { name: 'authorization', value: ({ cross }) => cross },
  { name: 'content-length', value: '99999999' },
  { name: 'x-forwarded-for', value: '127.0.0.1' },
];

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ m: fc.constant('field' as const), at: fc.nat(), nasty: fc.nat(NASTY.length - 1) }) },
  { weight: 3, arbitrary: fc.record({ m: fc.constant('wrong-type' as const), at: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ m: fc.constant('drop' as const), at: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ m: fc.constant('extra' as const), at: fc.nat(), key: fc.nat(EXTRA_KEYS.length - 1), nasty: fc.nat(NASTY.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ m: fc.constant('deep' as const), at: fc.nat(), depth: fc.constantFrom(100, 1000, 10_000, 100_000), shape: fc.constantFrom<'array' | 'object'>('array', 'object') }) },
  { weight: 2, arbitrary: fc.record({ m: fc.constant('content-type' as const), which: fc.nat(CONTENT_TYPES.length - 1) }) },
  { weight: 2, arbitrary: fc.record({ m: fc.constant('break-json' as const), which: fc.nat(BREAK_JSON.length - 1) }) },
  { weight: 2, arbitrary: fc.record({ m: fc.constant('body-shape' as const), which: fc.nat(BODY_SHAPES.length - 1) }) },
  { weight: 1, arbitrary: fc.constant({ m: 'huge-body' as const }) },
  { weight: 3, arbitrary: fc.record({ m: fc.constant('path' as const), param: fc.nat(), nasty: fc.nat(NASTY_PATH.length + 9) }) },
  { weight: 2, arbitrary: fc.record({ m: fc.constant('query' as const), param: fc.nat(), nasty: fc.nat(NASTY_QUERY.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ m: fc.constant('query-extra' as const), key: fc.nat(EXTRA_QUERY_KEYS.length - 1), nasty: fc.nat(NASTY_QUERY.length - 1) }) },
  { weight: 2, arbitrary: fc.record({ m: fc.constant('header' as const), which: fc.nat(HEADER_VARIANTS.length - 1) }) },
  { weight: 3, arbitrary: fc.record({ m: fc.constant('foreign' as const), at: fc.nat() }) },
);

/** One request for `op`: valid by its schemas, then (mostly) mutated. */
export function requestFor(doc: Json, target: FuzzOperation): fc.Arbitrary<RequestSpec> {
  const params = ((target.op.parameters ?? []) as Json[]).map((p) => (p.$ref ? resolveRef(doc, p.$ref)! : p));
  const pathArbs = Object.fromEntries(params.filter((p) => p.in === 'path').map((p) => [p.name, valueFor(doc, p.schema, p.name)]));
  const queryArbs = params
    .filter((p) => p.in === 'query')
    .map((p) => fc.option(valueFor(doc, p.schema, p.name).map((v): [string, unknown] => [p.name, v]), { freq: 2, nil: null }));
  const bodySchema = target.op.requestBody?.content?.['application/json']?.schema as Json | undefined;
  const example = target.op.requestBody?.content?.['application/json']?.example;
  const generated = bodySchema ? valueFor(doc, bodySchema, '') : null;
  // The documented example, with the caller's ids in place of the example ids: valid by
  // construction, so the mutations start from requests that reach deep into the handlers.
  const valid = generated && example !== undefined ? fc.oneof(generated, exampleWithIds(example)) : generated;
  const body: fc.Arbitrary<unknown> = valid ? (target.op.requestBody.required ? valid : fc.option(valid, { nil: undefined })) : fc.constant(undefined);
  const auth: fc.Arbitrary<Auth> =
    target.auth === 'admin'
      ? fc.constantFrom<Auth>('admin', 'admin', 'admin', 'admin', 'admin', 'admin', 'admin', 'admin', 'admin-wrong', 'A')
      : fc.constantFrom<Auth>(...(Array(40).fill('A') as Auth[]), 'B', 'B', 'none', 'wrong-key', 'cross-key', 'garbage');
  const idem = target.method === 'GET' ? fc.constant(null) : fc.option(fc.oneof({ weight: 1, arbitrary: fc.constantFrom('fuzz-1', 'fuzz-2') }, { weight: 9, arbitrary: fc.stringMatching(/^[a-z0-9-]{8,40}$/) }), { freq: 6, nil: null });
  const mutations = fc.oneof({ weight: 2, arbitrary: fc.constant<Mutation[]>([]) }, { weight: 3, arbitrary: fc.array(mutationArb, { minLength: 1, maxLength: 3 }) });
  return fc.record({
    op: fc.constant(target.key),
    auth,
    path: fc.record(pathArbs),
    query: fc.tuple(...queryArbs).map((q) => q.filter((x): x is [string, unknown] => x !== null)),
    idempotencyKey: idem,
    body,
    mutations,
  });
}

/** An example body with every example id replaced by an id of the same kind, and local receiver URLs. */
function exampleWithIds(example: unknown): fc.Arbitrary<unknown> {
  const parts: fc.Arbitrary<unknown>[] = [];
  const shape = (v: unknown, key: string): unknown => {
    if (typeof v === 'string') {
      const kind = /^([a-z]+)_[0-9a-z]{20,}$/.exec(v)?.[1];
      if (kind && KINDS.includes(kind)) return parts.push(idRef(kind)) - 1;
      if (key === 'url') return parts.push(fc.constantFrom(...URLS)) - 1;
      return { literal: v };
    }
    if (Array.isArray(v)) return v.map((x) => shape(x, key));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shape(x, k)]));
    return { literal: v };
  };
  const template = shape(example, '');
  const fill = (tpl: unknown, values: unknown[]): unknown => {
    if (typeof tpl === 'number') return values[tpl];
    if (Array.isArray(tpl)) return tpl.map((x) => fill(x, values));
    if (tpl && typeof tpl === 'object' && 'literal' in tpl) return (tpl as { literal: unknown }).literal;
    if (tpl && typeof tpl === 'object') return Object.fromEntries(Object.entries(tpl).map(([k, x]) => [k, fill(x, values)]));
    return tpl;
  };
  return fc.tuple(...parts).map((values) => fill(template, values));
}

/** Serializes a body, writing RawJson literals and Long strings as they are and keeping own `__proto__` keys. */
export function toJsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (value instanceof Long) return JSON.stringify(value.value());
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .map((k) => `${JSON.stringify(k)}:${toJsonText((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return value === undefined ? 'null' : JSON.stringify(value);
}

/** Sets an own property, even `__proto__`, without touching any prototype. */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Every place in a body a value sits: [container, key] pairs, depth first. */
export function slotsOf(value: unknown): [Record<string, unknown> | unknown[], string | number][] {
  const out: [Record<string, unknown> | unknown[], string | number][] = [];
  const walk = (v: unknown) => {
    if (v instanceof RawJson || v instanceof Long || v instanceof IdRef) return;
    if (Array.isArray(v)) {
      v.forEach((x, i) => {
        out.push([v, i]);
        walk(x);
      });
    } else if (v && typeof v === 'object') {
      for (const k of Object.keys(v)) {
        out.push([v as Record<string, unknown>, k]);
        walk((v as Record<string, unknown>)[k]);
      }
    }
  };
  walk(value);
  return out;
}

/** Every object in a body, the body itself included. */
export function objectsOf(value: unknown): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const walk = (v: unknown) => {
    if (v instanceof RawJson || v instanceof Long || v instanceof IdRef) return;
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      out.push(v as Record<string, unknown>);
      Object.values(v).forEach(walk);
    }
  };
  walk(value);
  return out;
}

/** A value of another JSON type than `v`. */
export function wrongType(v: unknown): unknown {
  if (typeof v === 'string') return /^-?\d/.test(v) ? { amount: v } : 12;
  if (typeof v === 'number') return String(v) + 'x';
  if (typeof v === 'boolean') return String(v);
  if (v === null) return {};
  if (Array.isArray(v)) return Object.fromEntries(v.map((x, i) => [String(i), x]));
  if (v instanceof IdRef) return 42;
  if (typeof v === 'object') return [v];
  return null;
}
