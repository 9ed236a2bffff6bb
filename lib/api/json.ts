import Decimal from 'decimal.js';
import { ApiError } from '../errors';
import { randomHex } from '../money';
import { formatParam } from './zod-errors';
import { walkBody } from './input';

/**
 * A JSON number from a request body that a 64-bit float cannot hold exactly: more significant
 * digits than a double keeps (`12345678901234567`, `0.1000000000000000001`) or out of its range
 * (`1e400`). `JSON.parse` would round it silently; the body parse keeps the text as sent instead,
 * so a field that takes numeric strings (units, cents) reads the exact value and judges it, and
 * anywhere else refuses it by name.
 */
export class InexactNumber {
  constructor(readonly source: string) {}
}

/** For a schema that takes numbers or numeric strings: the number as sent, when it was inexact. */
export function exactText(value: unknown): unknown {
  return value instanceof InexactNumber ? value.source : value;
}

/**
 * Refuses a parsed body that still holds an inexact number: one in a field that is stored as sent
 * (metadata), where rounding it would store something the caller did not send.
 */
export function refuseInexact(value: unknown): void {
  walkBody(value, (v, path) => {
    if (!(v instanceof InexactNumber)) return;
    const param = formatParam(path);
    throw new ApiError('invalid_request', `${param ?? 'The body'} holds the number ${clip(v.source)}, which JSON numbers cannot carry exactly here; send it as a string.`, param);
  });
}

function clip(text: string): string {
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

// A number with at most 15 significant digits between 1e-15 and 1e15 survives a double; every
// other number literal has 16 digits and dots in a row, or an exponent. Bodies without either
// (nearly all) skip the scan.
const SUSPECT = /[\d.]{16}|\d[eE]/;

/**
 * `JSON.parse`, except that every number literal a double cannot hold exactly comes back as an
 * `InexactNumber`. Throws `SyntaxError` on invalid JSON, as `JSON.parse` does.
 */
export function parseJsonBody(raw: string): { value: unknown; inexact: boolean } {
  const value: unknown = JSON.parse(raw);
  if (!SUSPECT.test(raw)) return { value, inexact: false };
  const spans = inexactSpans(raw);
  if (spans.length === 0) return { value, inexact: false };

  // Each inexact literal becomes a string no client can send (a fresh nonce), which the reviver
  // turns back into the literal's text. Literal order cannot be relied on in the reviver: JSON
  // objects put integer-like keys first, and a repeated key drops the earlier value.
  const marker = `\u0000${randomHex(12)}:`;
  let rewritten = '';
  let from = 0;
  spans.forEach(([start, end], i) => {
    rewritten += raw.slice(from, start) + JSON.stringify(marker + i);
    from = end;
  });
  rewritten += raw.slice(from);
  const revived: unknown = JSON.parse(rewritten, (_key, v: unknown) =>
    typeof v === 'string' && v.startsWith(marker) ? new InexactNumber(raw.slice(...spans[Number(v.slice(marker.length))])) : v,
  );
  return { value: revived, inexact: true };
}

/** Start and end of every number literal outside strings that a double does not hold exactly. */
function inexactSpans(raw: string): [number, number][] {
  const spans: [number, number][] = [];
  const n = raw.length;
  let i = 0;
  while (i < n) {
    const c = raw.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // To the closing quote: the first one after an even run of backslashes (the text is valid JSON).
      let end = raw.indexOf('"', i + 1);
      for (;;) {
        let slashes = 0;
        while (raw.charCodeAt(end - 1 - slashes) === 0x5c /* \ */) slashes++;
        if (slashes % 2 === 0) break;
        end = raw.indexOf('"', end + 1);
      }
      i = end + 1;
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      const start = i;
      i++;
      while (i < n) {
        const d = raw.charCodeAt(i);
        if ((d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) i++;
        else break;
      }
      const text = raw.slice(start, i);
      if (!holdsExactly(text)) spans.push([start, i]);
    } else {
      i++;
    }
  }
  return spans;
}

function holdsExactly(text: string): boolean {
  const n = Number(text);
  if (!Number.isFinite(n)) return false;
  // Short literals without an exponent need no decimal arithmetic.
  if (text.length < 16 && !/[eE]/.test(text)) return true;
  return new Decimal(text).eq(new Decimal(String(n)));
}
