import type { z } from 'zod';

/** How every request body and form is parsed: issues keep the input they were about (see describeIssue). */
export const parseOptions = { reportInput: true } as const;

/** `[3].cost_override.amount` style field paths, as the error contract names them. */
export function formatParam(path: PropertyKey[]): string | null {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out || null;
}

export function describeIssue(issue: z.core.$ZodIssue, prefix: PropertyKey[] = []): { message: string; param: string | null } {
  const path = [...prefix, ...issue.path];
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0];
    const param = formatParam([...path, key]);
    return { message: `Unknown field: ${param}.`, param };
  }
  const param = formatParam(path);
  const name = param ?? 'body';
  if (issue.code === 'invalid_type') {
    // Issues carry their input only when parsed with `reportInput` (parseOptions): a field sent
    // with the wrong type is not a missing one.
    if (!('input' in issue) || issue.input === undefined) return { message: `${name} is required.`, param };
    // Without a message of the schema's own (below), the type it expected.
    if (!issue.message || issue.message.startsWith('Invalid input')) return { message: `${name} must be ${article(issue.expected)}.`, param };
  }
  const msg = issue.message && !issue.message.startsWith('Invalid input') ? issue.message : `${name} is invalid.`;
  return { message: msg.startsWith(name) || !param ? msg : `${name} ${msg}`, param };
}

function article(expected: string): string {
  if (expected === 'array') return 'an array';
  if (expected === 'object') return 'an object';
  if (expected === 'int') return 'an integer';
  return `a ${expected}`;
}
