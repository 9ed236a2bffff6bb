import { ApiError } from '../errors';
import { formatParam } from './zod-errors';

/**
 * How deep a request body may nest: far beyond any real payload, and far short of where
 * anything downstream that recurses (JSON.stringify, the database's JSON parser) runs out of stack.
 */
export const MAX_DEPTH = 64;

// PostgreSQL stores neither NUL in text or jsonb, nor an unpaired UTF-16 surrogate in jsonb;
// the drivers would silently turn the latter into U+FFFD in text columns.
// eslint-disable-next-line no-control-regex -- NUL is exactly what this looks for
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Visits every value of a parsed body with its path, parents before children, without
 * recursion (a body of a hundred thousand nested arrays must not overflow the stack). A visit
 * that throws stops the walk.
 */
export function walkBody(value: unknown, visit: (value: unknown, path: PropertyKey[]) => void): void {
  const stack: { value: unknown; path: PropertyKey[] }[] = [{ value, path: [] }];
  while (stack.length) {
    const { value: v, path } = stack.pop()!;
    visit(v, path);
    if (Array.isArray(v)) v.forEach((item, i) => stack.push({ value: item, path: [...path, i] }));
    else if (v !== null && typeof v === 'object') for (const [key, item] of Object.entries(v)) stack.push({ value: item, path: [...path, key] });
  }
}

/**
 * Refuses input that cannot be stored as sent: strings (values and keys) with NUL or unpaired
 * surrogates, and nesting deeper than MAX_DEPTH.
 */
export function checkStorable(value: unknown): void {
  walkBody(value, (v, path) => {
    if (typeof v === 'string') {
      if (UNSTORABLE.test(v)) throw unstorable(path);
    } else if (v !== null && typeof v === 'object') {
      if (path.length >= MAX_DEPTH) throw new ApiError('invalid_request', `The request nests deeper than ${MAX_DEPTH} levels.`, formatParam(path));
      if (!Array.isArray(v)) for (const key of Object.keys(v)) if (UNSTORABLE.test(key)) throw unstorable([...path, key]);
    }
  });
}

/** Whether a string can be stored as sent (no NUL, no unpaired surrogate). */
export function isStorable(text: string): boolean {
  return !UNSTORABLE.test(text);
}

/** What a field holding such a string is told, by the API and the console alike. */
export function unstorableMessage(param: string | null): string {
  return `${param ?? 'The body'} must not contain NUL characters or unpaired surrogates.`;
}

function unstorable(path: PropertyKey[]): ApiError {
  const param = formatParam(path);
  return new ApiError('invalid_request', unstorableMessage(param), param);
}
