/**
 * Finds secrets in log output: every kind the service holds, by its shape, and the exact values a
 * test knows (passwords, tokens, APP_SECRET), raw or as they would travel (base64 in a Basic
 * header, URL-encoded in a form). Used on the logs of whole test runs and of a server taken
 * through every secret (scripts/log-secrets.test.ts); its own test plants each kind.
 */
export type Leak = { kind: string; line: number; match: string };

/** The shapes of the secrets the service issues or is given. */
export const SECRET_PATTERNS: { kind: string; re: RegExp }[] = [
  // Our API keys: sk_ and 32 characters of base64url (lib/billing/companies).
  { kind: 'api key', re: /\bsk_[A-Za-z0-9_-]{32}(?![A-Za-z0-9_-])/g },
  { kind: 'processor key', re: /\b(?:sk|rk|pk)_(?:test|live)_[A-Za-z0-9_]+/g },
  { kind: 'card token', re: /\btok_[A-Za-z0-9_]+/g },
  { kind: 'webhook secret', re: /\bwhsec_[A-Za-z0-9+/=]{8,}/g },
  { kind: 'basic credentials', re: /\bBasic\s+[A-Za-z0-9+/]{6,}={0,2}/g },
  { kind: 'bearer token', re: /\bBearer\s+[A-Za-z0-9._~+/-]{6,}=*/g },
];

function encodings(value: string): string[] {
  return [...new Set([value, Buffer.from(value).toString('base64'), Buffer.from(value).toString('base64url'), encodeURIComponent(value)])];
}

/**
 * Every leak in `text`. `known` are values that must never appear, in any of their usual
 * encodings; values shorter than 8 characters are refused (they would match by chance).
 */
export function findSecrets(text: string, known: Record<string, string> = {}): Leak[] {
  const leaks: Leak[] = [];
  const lines = text.split('\n');
  const values = Object.entries(known).flatMap(([kind, value]) => {
    if (value.length < 8) throw new Error(`${kind}: a known secret of ${value.length} characters would match by chance`);
    return encodings(value).map((v) => ({ kind, v }));
  });
  lines.forEach((line, i) => {
    for (const { kind, re } of SECRET_PATTERNS) for (const m of line.matchAll(re)) leaks.push({ kind, line: i + 1, match: m[0] });
    for (const { kind, v } of values) if (line.includes(v)) leaks.push({ kind, line: i + 1, match: v });
  });
  return leaks;
}

/** The JSON log lines of mixed output (a person's banner or a tool's plain text are not log lines). */
export function logLines(text: string): string {
  return text
    .split('\n')
    .filter((l) => {
      if (!l.startsWith('{')) return false;
      try {
        const o = JSON.parse(l) as Record<string, unknown>;
        return typeof o.level === 'string' && typeof o.msg === 'string';
      } catch {
        return false;
      }
    })
    .join('\n');
}
