import type { Json } from './document';
import { resolveRef } from './json-schema-check';

/** Helpers that turn the OpenAPI document into rows for the /docs page. */

export type FieldRow = { name: string; type: string; required: boolean; description: string; depth: number };

const refName = (ref: string) => ref.split('/').pop() ?? ref;

export function deref(doc: Json, node: Json | undefined): Json | undefined {
  let n = node;
  for (let i = 0; n?.$ref && i < 10; i++) n = resolveRef(doc, n.$ref);
  return n;
}

/** A short human type: `string`, `integer`, `Balance | null`, `array of Event`, `"monthly"`. */
export function typeLabel(schema: Json | undefined): string {
  if (!schema || Object.keys(schema).length === 0) return 'any';
  if (schema.$ref) return refName(schema.$ref);
  if ('const' in schema) return JSON.stringify(schema.const);
  if (schema.anyOf || schema.oneOf) return [...new Set(((schema.anyOf ?? schema.oneOf) as Json[]).map(typeLabel))].join(' | ');
  const types: string[] = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  const label = types
    .map((t) => {
      if (t === 'array') return `array of ${typeLabel(schema.items)}`;
      if (t === 'object' && schema.additionalProperties && typeof schema.additionalProperties === 'object' && !schema.properties) {
        return `object of ${typeLabel(schema.additionalProperties)}`;
      }
      if (t === 'string' && schema.format) return `string (${schema.format})`;
      return t;
    })
    .join(' | ');
  return label || 'any';
}

/** Constraints worth a reader's eye: allowed values, bounds, short patterns, defaults. */
export function constraints(schema: Json | undefined, described = ''): string[] {
  if (!schema) return [];
  const out: string[] = [];
  const members = ((schema.anyOf ?? []) as Json[]).filter((m) => m.type !== 'null');
  const s = members.length === 1 ? { ...members[0], ...schema } : schema;
  if (s.enum) out.push(`One of: ${(s.enum as unknown[]).map((v) => JSON.stringify(v)).join(', ')}.`);
  if (s.minLength !== undefined || s.maxLength !== undefined) {
    out.push(s.minLength !== undefined && s.maxLength !== undefined ? `${s.minLength} to ${s.maxLength} characters.` : s.maxLength !== undefined ? `At most ${s.maxLength} characters.` : `At least ${s.minLength} characters.`);
  }
  if (s.minimum !== undefined && s.maximum !== undefined && s.maximum < Number.MAX_SAFE_INTEGER) out.push(`${s.minimum} to ${s.maximum}.`);
  else if (s.minimum !== undefined && s.minimum !== 0) out.push(`At least ${s.minimum}.`);
  if (s.minItems !== undefined) out.push(`At least ${s.minItems} item${s.minItems === 1 ? '' : 's'}.`);
  if (s.maxItems !== undefined) out.push(`At most ${s.maxItems} items.`);
  if (s.pattern && s.pattern.length <= 60 && !s.pattern.includes('`') && !/starts with/.test(described)) out.push(`Pattern: \`${s.pattern}\`.`);
  if (s.default !== undefined) out.push(`Default: ${JSON.stringify(s.default)}.`);
  return out;
}

/**
 * Flattens an object schema into rows, nested fields as `parent.child` and `list[].child`,
 * following $refs up to `maxDepth` levels so a response table shows what a reader gets.
 */
export function fieldRows(doc: Json, schema: Json | undefined, maxDepth = 2, prefix = '', depth = 0, seen: string[] = []): FieldRow[] {
  const s = deref(doc, schema);
  if (!s) return [];
  if (s.type === 'array' || (Array.isArray(s.type) && s.type.includes('array'))) return fieldRows(doc, s.items, maxDepth, `${prefix}[]`, depth, seen);
  const members = ((s.anyOf ?? []) as Json[]).filter((m) => m.type !== 'null');
  if (members.length === 1) return fieldRows(doc, members[0], maxDepth, prefix, depth, seen);
  if (!s.properties) return [];
  const required = new Set<string>(s.required ?? []);
  const rows: FieldRow[] = [];
  for (const [key, prop] of Object.entries(s.properties as Record<string, Json>)) {
    const name = prefix ? `${prefix}.${key}` : key;
    const target = deref(doc, prop);
    const own = prop.description ?? target?.description ?? '';
    const description = [own, ...constraints(target, own)].filter(Boolean).join(' ');
    rows.push({ name, type: typeLabel(prop), required: required.has(key), description, depth });
    const refs = collectRefs(prop);
    if (depth + 1 < maxDepth && !refs.some((r) => seen.includes(r))) rows.push(...fieldRows(doc, prop, maxDepth, name, depth + 1, [...seen, ...refs]));
  }
  return rows;
}

function collectRefs(schema: Json): string[] {
  const out: string[] = [];
  if (schema.$ref) out.push(schema.$ref);
  for (const m of (schema.anyOf ?? []) as Json[]) out.push(...collectRefs(m));
  if (schema.items && typeof schema.items === 'object') out.push(...collectRefs(schema.items));
  return out;
}

export const slug = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
