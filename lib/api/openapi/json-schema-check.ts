import type { Json } from './document';

/**
 * A small JSON Schema (2020-12 subset) checker for the keywords this document uses: $ref into
 * the document, type, enum, const, properties, required, additionalProperties, propertyNames,
 * items, anyOf/oneOf/allOf, string and number bounds, pattern, and the date-time, email and uri
 * formats. Enough to hold real responses against the published document without a dependency.
 */
export function checkJsonSchema(root: Json, schema: Json, value: unknown, path = '$'): string[] {
  const errors: string[] = [];
  const at = (msg: string) => errors.push(`${path}: ${msg}`);

  if (schema.$ref) {
    const target = resolveRef(root, schema.$ref);
    if (!target) return [`${path}: unresolvable $ref ${schema.$ref}`];
    errors.push(...checkJsonSchema(root, target, value, path));
  }
  if (schema.allOf) for (const s of schema.allOf as Json[]) errors.push(...checkJsonSchema(root, s, value, path));
  if (schema.anyOf && !(schema.anyOf as Json[]).some((s) => checkJsonSchema(root, s, value, path).length === 0)) {
    const detail = (schema.anyOf as Json[]).map((s) => checkJsonSchema(root, s, value, path).join('; ')).join(' | ');
    at(`matches no anyOf member (${detail})`);
  }
  if (schema.oneOf) {
    const matching = (schema.oneOf as Json[]).filter((s) => checkJsonSchema(root, s, value, path).length === 0).length;
    if (matching !== 1) at(`matches ${matching} oneOf members, not exactly one`);
  }
  if ('const' in schema && !deepEqual(schema.const, value)) at(`must be ${JSON.stringify(schema.const)}`);
  if (schema.enum && !(schema.enum as unknown[]).some((e) => deepEqual(e, value))) at(`must be one of ${JSON.stringify(schema.enum)}, got ${JSON.stringify(value)}`);

  if (schema.type !== undefined) {
    const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => hasType(value, t))) {
      at(`must be ${types.join(' or ')}, got ${JSON.stringify(value)}`);
      return errors;
    }
  }

  if (typeof value === 'string') {
    if (schema.minLength !== undefined && [...value].length < schema.minLength) at(`shorter than ${schema.minLength}`);
    if (schema.maxLength !== undefined && [...value].length > schema.maxLength) at(`longer than ${schema.maxLength}`);
    if (schema.pattern && !new RegExp(schema.pattern, 'u').test(value)) at(`does not match ${schema.pattern}`);
    if (schema.format === 'date-time' && !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(value)) at('is not an RFC 3339 date-time');
    if (schema.format === 'email' && !/^[^@\s]+@[^@\s]+$/.test(value)) at('is not an email address');
    if (schema.format === 'uri' && !URL.canParse(value)) at('is not a URI');
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) at(`below ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) at(`above ${schema.maximum}`);
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) at(`not above ${schema.exclusiveMinimum}`);
    if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) at(`not below ${schema.exclusiveMaximum}`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) at(`fewer than ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) at(`more than ${schema.maxItems} items`);
    if (schema.items && typeof schema.items === 'object') value.forEach((v, i) => errors.push(...checkJsonSchema(root, schema.items, v, `${path}[${i}]`)));
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const obj = value as Record<string, unknown>;
    const props = (schema.properties ?? {}) as Record<string, Json>;
    for (const key of (schema.required ?? []) as string[]) if (!(key in obj)) at(`missing required property ${key}`);
    for (const [key, v] of Object.entries(obj)) {
      if (schema.propertyNames) errors.push(...checkJsonSchema(root, schema.propertyNames, key, `${path} key ${JSON.stringify(key)}`));
      if (props[key]) errors.push(...checkJsonSchema(root, props[key], v, `${path}.${key}`));
      else if (schema.additionalProperties === false) at(`has undocumented property ${key}`);
      else if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
        errors.push(...checkJsonSchema(root, schema.additionalProperties, v, `${path}.${key}`));
      }
    }
  }
  return errors;
}

export function resolveRef(root: Json, ref: string): Json | undefined {
  if (!ref.startsWith('#/')) return undefined;
  let node: any = root;
  for (const part of ref.slice(2).split('/')) node = node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  return node;
}

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'array':
      return Array.isArray(value);
    case 'object':
      return value !== null && typeof value === 'object' && !Array.isArray(value);
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    default:
      return typeof value === type;
  }
}

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
