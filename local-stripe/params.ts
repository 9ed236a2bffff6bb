/**
 * Typed access to parsed form params with Stripe's validation behaviour:
 * unknown params are rejected (as Stripe does, which catches typos before
 * they reach production), wrong types give Stripe's "Invalid …" errors.
 */
import type { FormObject, FormValue } from './form';
import { invalidParam, invalidRequest, missingParam, unknownParam } from './errors';

export type Metadata = Record<string, string>;

function describe(value: FormValue): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Rejects any key of `obj` not listed in `allowed`; `prefix` names nested params (`card`). */
export function allowOnly(obj: FormObject, allowed: readonly string[], prefix?: string): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key)) throw unknownParam(prefix ? `${prefix}[${key}]` : key);
  }
}

function has(obj: FormObject, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

export function getString(obj: FormObject, key: string, param = key): string | undefined {
  if (!has(obj, key)) return undefined;
  const v = obj[key];
  if (typeof v !== 'string') throw invalidParam(param, `Invalid string: ${describe(v)}`);
  return v;
}

export function requireString(obj: FormObject, key: string, param = key): string {
  const v = getString(obj, key, param);
  if (v === undefined || v === '') throw missingParam(param);
  return v;
}

/** Nullable string fields: an empty string unsets them (stored as null). */
export function getNullableString(obj: FormObject, key: string, param = key, maxLength = 5000): string | null | undefined {
  const v = getString(obj, key, param);
  if (v === undefined) return undefined;
  if (v.length > maxLength) throw invalidParam(param, `Invalid string: ${param} must be at most ${maxLength} characters`);
  return v === '' ? null : v;
}

export function getInt(obj: FormObject, key: string, param = key): number | undefined {
  const v = getString(obj, key, param);
  if (v === undefined) return undefined;
  if (!/^-?\d{1,15}$/.test(v)) throw invalidParam(param, `Invalid integer: ${v}`);
  return Number(v);
}

export function getBool(obj: FormObject, key: string, param = key): boolean | undefined {
  const v = getString(obj, key, param);
  if (v === undefined) return undefined;
  if (v !== 'true' && v !== 'false') throw invalidParam(param, `Invalid boolean: ${v}`);
  return v === 'true';
}

export function getObject(obj: FormObject, key: string, param = key): FormObject | undefined {
  if (!has(obj, key)) return undefined;
  const v = obj[key];
  // `param=` (empty string) is how the SDK encodes `null`/`''` for a hash: treat as empty.
  if (v === '') return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidParam(param, `Invalid object`);
  return v;
}

export function getStringArray(obj: FormObject, key: string, param = key): string[] | undefined {
  if (!has(obj, key)) return undefined;
  const v = obj[key];
  if (v === '') return [];
  const arr = Array.isArray(v) ? v : typeof v === 'string' ? [v] : null;
  if (!arr || !arr.every((x): x is string => typeof x === 'string')) {
    throw invalidParam(param, `Invalid array`);
  }
  return arr;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function getEmail(obj: FormObject, key = 'email'): string | null | undefined {
  const v = getNullableString(obj, key, key, 512);
  if (v && !EMAIL.test(v)) throw invalidRequest(`Invalid email address: ${v}`, { code: 'email_invalid', param: key });
  return v;
}

/**
 * Applies a `metadata` param the way Stripe does: keys are merged into the
 * existing metadata, an empty value deletes that key, and an empty
 * `metadata=` clears everything. Limits: 50 keys, 40-char keys, 500-char values.
 */
export function applyMetadata(current: Metadata, params: FormObject): Metadata {
  if (!has(params, 'metadata')) return current;
  const raw = params.metadata;
  if (raw === '') return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw invalidParam('metadata', 'Invalid object');
  const next: Metadata = { ...current };
  for (const [key, value] of Object.entries(raw)) {
    const param = `metadata[${key}]`;
    if (typeof value !== 'string') throw invalidParam(param, `Invalid string: ${describe(value)}`);
    if (key.length > 40) throw invalidParam(param, 'Metadata keys can have a maximum length of 40 characters.');
    if (value.length > 500) throw invalidParam(param, 'Metadata values can have a maximum length of 500 characters.');
    if (value === '') delete next[key];
    else next[key] = value;
  }
  if (Object.keys(next).length > 50) throw invalidParam('metadata', 'You can have a maximum of 50 metadata keys.');
  return next;
}

export interface Address {
  city: string | null;
  country: string | null;
  line1: string | null;
  line2: string | null;
  postal_code: string | null;
  state: string | null;
}

export const EMPTY_ADDRESS: Address = { city: null, country: null, line1: null, line2: null, postal_code: null, state: null };
const ADDRESS_KEYS = ['city', 'country', 'line1', 'line2', 'postal_code', 'state'] as const;

export function getAddress(obj: FormObject, key: string, param = key): Address | null | undefined {
  if (has(obj, key) && obj[key] === '') return null;
  const raw = getObject(obj, key, param);
  if (raw === undefined) return undefined;
  allowOnly(raw, ADDRESS_KEYS, param);
  const out: Address = { ...EMPTY_ADDRESS };
  for (const k of ADDRESS_KEYS) out[k] = getNullableString(raw, k, `${param}[${k}]`) ?? null;
  return out;
}
