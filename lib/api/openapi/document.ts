import { z } from 'zod';
import { STATUS, type ErrorType } from '../../errors';
import { MAX_CHARGE_CENTS, cents, chargeCents, denomination, exactNumber, nonNegativeUnits, positiveUnits, priceCents, units } from '../schemas/common';
import { topic } from '../schemas/webhooks';
import { ERROR_EXAMPLES, errorExampleBody, IDS, payloadByTopicExample, payloadByTypeExample } from './examples';
import { FIELD_DOCS, QUERY_DOCS, TYPE_DOCS } from './fields';
import { OPERATIONS, REQUEST_SCHEMAS, TAGS, type Operation } from './operations';
import { RESPONSE_SCHEMAS } from './responses';

/** A JSON Schema / OpenAPI object: loosely typed on purpose, it is data we emit. */
export type Json = Record<string, any>;

const COMPONENT = (name: string) => `#/components/schemas/${name}`;

/** Error response component names, one per status; 402 is built per operation (its types differ). */
const STATUS_RESPONSE: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  402: 'PaymentRequired',
  404: 'NotFound',
  409: 'Conflict',
  410: 'Gone',
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
  429: 'RateLimited',
  500: 'InternalError',
  502: 'ProcessorError',
  503: 'ServiceUnavailable',
};

const STATUS_WORDS: Record<number, string> = {
  400: 'Invalid request: malformed JSON, wrong types, missing required fields, bad input; `param` names the field.',
  401: 'Missing or wrong credentials.',
  402: 'Payment needed or refused.',
  404: 'No such resource for this company (other companies\' ids are 404 too).',
  409: 'Conflict: an illegal state transition, or an Idempotency-Key reused with a different body. With `Retry-After`, the work it conflicts with is still under way (a request with the same Idempotency-Key, or a renewal or another plan change of the account): retry after that many seconds.',
  410: 'Gone: a card collector or customer portal link that expired, was revoked, or was spent by 5 failed card attempts; a new link must be made.',
  413: 'Payload too large: a body over 1 MiB (64 KiB on unauthenticated calls), or a batch over 1000 events.',
  415: 'Unsupported media type: send JSON with Content-Type: application/json.',
  429: 'Rate limited: over the company\'s request rate or its requests in flight, or the address\'s budget of wrong credentials; retry after Retry-After seconds.',
  500: 'Internal error: never with a stack trace or SQL text; quote the request id.',
  502: 'The payment processor failed or timed out; nothing was charged twice.',
  503: 'Service unavailable: the database cannot be reached or is switching over to a standby (retry after Retry-After seconds; with the same Idempotency-Key a request is applied at most once), migrations are not applied, or the process is shutting down.',
};

const TYPES_BY_STATUS = new Map<number, ErrorType[]>();
for (const [type, status] of Object.entries(STATUS) as [ErrorType, number][]) TYPES_BY_STATUS.set(status, [...(TYPES_BY_STATUS.get(status) ?? []), type]);

const PATH_PARAMS: Record<string, { description: string; schema: Json; example: string }> = {
  company_id: { description: 'Your company id (`c_...`); any other company id is 404.', schema: { type: 'string', pattern: '^c_[A-Za-z0-9]+$' }, example: IDS.company },
  account_id: { description: 'Account id (`a_...`).', schema: { type: 'string' }, example: IDS.account },
  denomination: { description: 'Balance denomination.', schema: {}, example: 'credits' },
  event_id: { description: 'Event id (`ev_...`).', schema: { type: 'string' }, example: IDS.event },
  plan_id: { description: 'Plan id (`p_...`).', schema: { type: 'string' }, example: IDS.plan },
  webhook_id: { description: 'Webhook id (`w_...`).', schema: { type: 'string' }, example: IDS.webhook },
  delivery_id: { description: 'Delivery id (`whd_...`).', schema: { type: 'string' }, example: IDS.delivery },
  key_id: { description: 'API key id (`key_...`).', schema: { type: 'string' }, example: IDS.key },
  grant_id: { description: 'Credit grant id (`cg_...`).', schema: { type: 'string' }, example: IDS.grant },
  portal_link_id: { description: 'Customer portal link id (`pl_...`), as answered when the link was made.', schema: { type: 'string' }, example: IDS.portalLink },
  topic: { description: 'Webhook topic.', schema: {}, example: 'pause_balance' },
};

function clean(schema: Json): Json {
  const { $schema: _s, $id: _i, ...rest } = schema;
  return rest;
}

/** Type-level words for the shared pieces, and no 200-character regex beside format: date-time. */
function override({ zodSchema, jsonSchema }: { zodSchema: unknown; jsonSchema: Json }) {
  if (jsonSchema.format === 'date-time') delete jsonSchema.pattern;
  // A union's anyOf lists its options in order; the body parse's exact-number option is internal.
  const options = (zodSchema as { _zod?: { def?: { options?: unknown[] } } })._zod?.def?.options;
  if (Array.isArray(options) && options.includes(exactNumber) && Array.isArray(jsonSchema.anyOf)) {
    jsonSchema.anyOf = (jsonSchema.anyOf as Json[]).filter((_, i) => options[i] !== exactNumber);
  }
  const typeDoc =
    zodSchema === positiveUnits
      ? TYPE_DOCS.positiveUnits
      : zodSchema === nonNegativeUnits
        ? TYPE_DOCS.nonNegativeUnits
        : zodSchema === units
          ? TYPE_DOCS.units
          : zodSchema === cents
            ? TYPE_DOCS.cents
            : zodSchema === chargeCents
              ? TYPE_DOCS.chargeCents
              : zodSchema === priceCents
                ? TYPE_DOCS.priceCents
                : null;
  if (typeDoc) {
    jsonSchema.description = typeDoc;
    if (zodSchema === cents || zodSchema === chargeCents || zodSchema === priceCents) jsonSchema.examples = [2500];
    else jsonSchema.examples = [10, '0.5'];
    if (zodSchema === chargeCents || zodSchema === priceCents) jsonSchema.maximum = MAX_CHARGE_CENTS;
  }
}

function toJson(schema: z.ZodType, io: 'input' | 'output'): Json {
  return clean(z.toJSONSchema(schema, { io, unrepresentable: 'any', override }) as Json);
}

function registryToJson(schemas: Record<string, z.ZodType>, io: 'input' | 'output'): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(schemas)) registry.add(schema, { id });
  const out = z.toJSONSchema(registry, { io, unrepresentable: 'any', uri: COMPONENT, override }) as { schemas: Record<string, Json> };
  return Object.fromEntries(Object.entries(out.schemas).map(([k, v]) => [k, clean(v)]));
}

/** Adds FIELD_DOCS words in front of whatever the type already says. */
function describeFields(component: string, schema: Json, path = '') {
  if (schema.properties) {
    for (const [key, prop] of Object.entries(schema.properties as Record<string, Json>)) {
      const p = path ? `${path}.${key}` : key;
      const doc = FIELD_DOCS[`${component}.${p}`] ?? FIELD_DOCS[p] ?? FIELD_DOCS[key];
      if (doc) prop.description = prop.description ? `${doc} ${prop.description}` : doc;
      describeFields(component, prop, p);
    }
  }
  if (schema.items && typeof schema.items === 'object' && !schema.items.$ref) describeFields(component, schema.items, `${path}[]`);
  for (const member of (schema.anyOf ?? []) as Json[]) if (!member.$ref) describeFields(component, member, path);
}

function schemaRef(name: string): Json {
  return { $ref: COMPONENT(name) };
}

/** Error types an operation can answer: what every call of its kind can, plus its own. */
export function errorTypesOf(op: Operation): ErrorType[] {
  const types = new Set<ErrorType>();
  const mutating = op.method !== 'get';
  const readsBody = op.method === 'post' || op.method === 'put' || op.method === 'patch';
  // Every authenticated call reads the database, which can be switching over to a standby: 503
  // with Retry-After. (The public probes list it themselves; liveness and the document need none.)
  if (op.auth !== 'public') types.add('service_unavailable');
  if (op.auth === 'company') {
    for (const t of ['invalid_request', 'unauthorized', 'rate_limited', 'internal'] as const) types.add(t);
    if (op.path.includes('{')) types.add('not_found');
    if (mutating) types.add('conflict');
  } else if (op.auth === 'admin') {
    for (const t of ['invalid_request', 'unauthorized', 'not_found', 'internal'] as const) types.add(t);
    // The operator's calls honour Idempotency-Key too: a key reused with another body is 409.
    if (mutating) types.add('conflict');
  } else {
    types.add('internal');
  }
  if (readsBody && op.auth !== 'public') {
    types.add('payload_too_large');
    types.add('unsupported_media_type');
  }
  for (const t of op.errors ?? []) types.add(t);
  return [...types].sort((a, b) => STATUS[a] - STATUS[b]);
}

const errorHeaders = (status: number): Json => ({
  'Request-Id': { $ref: '#/components/headers/RequestId' },
  ...(status === 401 && { 'WWW-Authenticate': { $ref: '#/components/headers/WWWAuthenticate' } }),
  ...((status === 429 || status === 409 || status === 503) && { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } }),
});

function errorResponse(status: number, types: ErrorType[]): Json {
  const words = types.map((t) => `\`${t}\``).join(', ');
  return {
    description: `${STATUS_WORDS[status]} Types: ${words}.`,
    headers: errorHeaders(status),
    content: {
      'application/json': {
        schema: schemaRef('Error'),
        examples: Object.fromEntries(types.map((t) => [t, { $ref: `#/components/examples/${t}` }])),
      },
    },
  };
}

function envelope(op: Operation): Json {
  const r = op.response;
  if (r.schema === 'OpenApiDocument') {
    return {
      type: 'object',
      description: 'An OpenAPI 3.1 document (not wrapped in data).',
      properties: { openapi: { type: 'string', const: '3.1.0' }, info: { type: 'object' }, paths: { type: 'object' }, webhooks: { type: 'object' }, components: { type: 'object' } },
      required: ['openapi', 'info', 'paths'],
    };
  }
  const data = r.list ? { type: 'array', items: schemaRef(r.schema) } : schemaRef(r.schema);
  if (r.list === 'paged' || r.list === 'all') {
    const hasMore =
      r.list === 'paged'
        ? { type: 'boolean', description: 'Whether more items follow this page: when true, the last item\'s id is the `starting_after` of the next page.' }
        : { type: 'boolean', const: false, description: 'Always false: this list is never paged.' };
    return { type: 'object', properties: { data, has_more: hasMore }, required: ['data', 'has_more'], additionalProperties: false };
  }
  return { type: 'object', properties: { data }, required: ['data'], additionalProperties: false };
}

/** The 200 example: lists say whether more follow, like the real answers. */
function okExample(op: Operation): unknown {
  const r = op.response;
  if (r.schema === 'OpenApiDocument') return r.example;
  return r.list === 'paged' || r.list === 'all' ? { data: r.example, has_more: false } : { data: r.example };
}

function buildOperation(op: Operation, usedResponses: Set<string>): Json {
  const parameters: Json[] = [];
  for (const m of op.path.matchAll(/\{(\w+)\}/g)) parameters.push({ $ref: `#/components/parameters/${m[1]}` });
  if (op.query) {
    const q = toJson(op.query, 'input');
    const required = new Set<string>(q.required ?? []);
    for (const [name, schema] of Object.entries(q.properties as Record<string, Json>)) {
      // An object (properties[key]=value) is sent as a deepObject.
      const deep = schema.type === 'object' ? { style: 'deepObject', explode: true } : {};
      parameters.push({ name, in: 'query', required: required.has(name), description: QUERY_DOCS[name], ...deep, schema });
    }
  }
  if (op.auth !== 'public' && op.method !== 'get') {
    parameters.push({ $ref: '#/components/parameters/IdempotencyKey' }, { $ref: '#/components/parameters/XDedupeId' });
  }

  const okHeaders: Json = { 'Request-Id': { $ref: '#/components/headers/RequestId' } };
  if (op.response.list === 'paged') okHeaders.Link = { $ref: '#/components/headers/Link' };
  if (op.auth !== 'public' && op.method !== 'get') okHeaders['Idempotent-Replayed'] = { $ref: '#/components/headers/IdempotentReplayed' };

  const responses: Json = {
    '200': {
      description: op.response.description,
      headers: okHeaders,
      content: {
        'application/json': {
          schema: envelope(op),
          example: okExample(op),
        },
      },
    },
  };
  const types = errorTypesOf(op);
  for (const status of [...new Set(types.map((t) => STATUS[t]))]) {
    const here = types.filter((t) => STATUS[t] === status);
    const all = TYPES_BY_STATUS.get(status)!;
    if (here.length === all.length) {
      usedResponses.add(STATUS_RESPONSE[status]);
      responses[String(status)] = { $ref: `#/components/responses/${STATUS_RESPONSE[status]}` };
    } else {
      responses[String(status)] = errorResponse(status, here);
    }
  }

  const security = op.auth === 'company' ? [{ basicAuth: [] }] : op.auth === 'admin' ? [{ operatorBearer: [] }] : [];
  return {
    operationId: op.operationId,
    tags: [op.tag],
    summary: op.summary,
    ...(op.description && { description: op.description }),
    security,
    ...(parameters.length && { parameters }),
    ...(op.body && {
      requestBody: {
        required: !op.body.optional,
        content: { 'application/json': { schema: schemaRef(op.body.schema), example: op.body.example } },
      },
    }),
    responses,
    'x-error-types': types,
    ...(op.aliasOf && { 'x-alias-of': op.aliasOf }),
  };
}

const DESCRIPTION = `
The JSON API of the usage-based billing service: companies bill their customers (accounts) for
usage recorded as events against balances, with plans, refills, card payments and webhooks.

## Paths
Every endpoint is served under \`/v1\` (the form documented here). Every path also answers
without the prefix (\`/accounts/...\`, \`/events\`, \`/webhooks\`, \`/companies/...\`,
\`/plans/...\`, \`/test_clock\`, \`/openapi.json\`), with identical behaviour. \`autorefill\` is a
synonym of \`auto_refill\` in both refill paths, \`/v1/companies/{company_id}/plan\` of
\`/v1/companies/{company_id}/plans\`, and \`PUT\` of \`POST\` on \`modifymidmonth\`: each synonym is
listed below as an operation of its own whose \`x-alias-of\` names its canonical operation. The probes (\`/livez\`, \`/readyz\`, \`/health\`) have no \`/v1\` form.

## Authentication
Company calls use HTTP Basic authentication: the username is the company id (\`c_...\`), the
password an API key (\`Authorization: Basic base64(company_id:api_key)\`). The operator's calls
(\`POST /v1/companies\`, the test clock) use \`Authorization: Bearer <ADMIN_TOKEN>\`; without
\`ADMIN_TOKEN\` configured they are 404.

## Requests and responses
Bodies are JSON (\`Content-Type: application/json\`, at most 1 MiB; unknown fields are 400),
nested at most 64 levels deep. No string (body, query or path) may contain NUL characters or
unpaired UTF-16 surrogates: they cannot be stored as sent, so they are 400.
Success is \`200\` with the payload under \`data\` and nothing else at the top level (lists add
\`has_more\`, below). Every response carries a \`Request-Id\` header (\`req_...\`).

Lists put an array in \`data\`, newest first, and \`has_more\` beside it. \`limit\` (default
100, max 1000) and \`starting_after=<id>\` page through them: when \`has_more\` is true, the
last item's id is the \`starting_after\` of the next page, and a \`Link: <url>; rel="next"\`
header gives that page's address.

Units are JSON numbers rendered from exact decimals (inputs may be numbers or numeric
strings, at most 12 decimals). USD amounts are non-negative integer cents (100 is one dollar).
Timestamps are ISO 8601 UTC strings.

## Idempotency
Every company or operator call with POST, PUT, PATCH or DELETE honours an \`Idempotency-Key\` header (\`X-DedupeId\` is a
synonym) for 24 hours: a retry with the same key and body returns the first response (with
\`Idempotent-Replayed: true\`); the same key with a different body is 409 \`conflict\`, and while
the first request is still running a retry is 409 \`conflict\` with \`Retry-After: 1\`.
A 5xx answer is not remembered, so a retry with the key runs again; a charge the first attempt
made is picked up again by that retry, never made twice. Events may also carry their own
\`idempotency_key\`.

## Errors
Every error has the body \`{"error": {"type", "message", "param", "request_id"}}\`; \`param\`
names the field at fault (\`name\`, \`[3].type\`) or is null. Types and statuses:
${(Object.entries(STATUS) as [ErrorType, number][]).map(([t, s]) => `\`${s}\` \`${t}\``).join(', ')}.
A 402 \`insufficient_balance\` or \`spend_limit_exceeded\` adds \`rejected_event_id\`. A 502 \`processor_error\` with
\`charge_pending: true\` (and \`charge_id\`) means the processor's answer is not known yet: the
charge is settled automatically, and what it pays for is granted only if it was paid.

## Webhooks
See the \`webhooks\` section: deliveries are signed per Standard Webhooks (\`webhook-id\`,
\`webhook-timestamp\`, \`webhook-signature\` with the webhook's \`whsec_\` secret) and carry
Basic credentials when the webhook has them. A receiver must answer 2xx within 10 s;
otherwise the delivery is retried with backoff for about a day, and every attempt is logged.
Redirects are not followed. Webhook URLs must have a public host: loopback, private, link-local
and other non-public addresses are refused at registration, and names that resolve to them fail
their attempts as \`destination_not_allowed\`. A company has at most 20 webhooks.

The hosted card collector page (\`/collect/...\`) and its own submit call are not part of this
API. Its submit call takes bodies of at most 64 KiB and a limited number of calls a minute from
one client address (429 \`rate_limited\`; 10 by default), and answers 410 \`link_expired\` once
the link has expired or 5 card attempts through it failed (declined cards and refused card
tokens): a new link must be made with \`POST /v1/accounts/{account_id}/card_collector\`.

The customer portal page (\`/portal/...\`, made with \`POST /v1/accounts/{account_id}/portal_link\`)
and its own card call are not part of this API either. The page shows one account to its end
customer without sign-in for \`expires_in\` seconds (24 hours by default): balances, plan and
next renewal, the last 20 charges, and a form to replace the card (a past-due renewal is
retried at once with the new card). A link stops at once when revoked, alone
(\`DELETE /v1/portal_links/{portal_link_id}\`) or with all of its account's
(\`POST /v1/accounts/{account_id}/portal_links/revoke\`). Every card saved through a collector
or portal link sends \`card_changed\`. The card call keeps the collector's rules: 64 KiB
bodies, the per-address limit, and 410 \`link_expired\` once the link has expired, was revoked,
or 5 card attempts through it failed.
`.trim();

const spendLimitData = { period: 'day', period_start: '2026-03-14T00:00:00.000Z', limit: '40', spent: '41.5' };
const cardChangedData = {
  source: 'portal',
  link_id: IDS.portalLink,
  payment_method: { brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2030 },
  previous_payment_method: { brand: 'mastercard', last4: '4444', exp_month: 3, exp_year: 2028 },
};

function webhookOperation(kind: 'type' | 'topic'): Json {
  const schema = kind === 'type' ? 'WebhookPayloadByType' : 'WebhookPayloadByTopic';
  const example = kind === 'type' ? payloadByTypeExample : payloadByTopicExample;
  const registered =
    kind === 'type'
      ? 'Sent to webhooks registered by event type with `POST /v1/webhooks` (variant A).'
      : 'Sent to webhooks registered with `POST /v1/companies/{company_id}/webhooks` and subscribed to topics (variant B).';
  return {
    post: {
      operationId: kind === 'type' ? 'webhookByType' : 'webhookByTopic',
      tags: ['Webhooks'],
      summary: kind === 'type' ? 'Balance notification (variant A, by type)' : 'Balance notification (variant B, by topic)',
      description: `${registered} Topics: \`pause_balance\` and \`negative_balance\` when a balance's available drops below zero (\`pause_balance\` also when a gated event is refused), \`balance_change\` (may be coalesced; carries the balance at send time), \`auto_refill\` on refills and plan renewals, \`threshold\` when a plan's threshold_alert_percentage or a refill threshold is crossed, \`refill_failed\`, \`payment_failed\`, \`card_changed\` when a card is saved through a hosted page (the card collector or a customer portal link: \`data\` names the page, its link id, the new card and the one it replaced), \`spend_limit_reached\` when an account's spend in a day, week or month passes a \`notify\` spend limit (once per limit and period; \`data\`: \`period\`, \`period_start\`, \`limit\`, \`spent\`), \`refill_limit_reached\` when a threshold refill is not charged because the month's \`max_charges_per_month\` were made (once per month; \`data\`: \`max_charges_per_month\`, \`month\`). Crossing topics fire once per crossing. Verify \`webhook-signature\` (HMAC-SHA256 over \`webhook-id.webhook-timestamp.body\` with the webhook secret); \`webhook-timestamp\` is real wall-clock time even under the test clock.`,
      security: [{}, { webhookBasicAuth: [] }],
      parameters: [
        { name: 'webhook-id', in: 'header', required: true, description: 'The delivery id (`whd_...`), the same on every attempt that carries the same message: deduplicate on it. A `balance_change` retried with a newer balance than its attempt before is a new message: `<delivery id>_r<attempt>` (the delivery endpoints take that form too).', schema: { type: 'string' }, example: IDS.delivery },
        { name: 'webhook-timestamp', in: 'header', required: true, description: 'Unix seconds when this attempt was sent.', schema: { type: 'string' }, example: '1805284800' },
        { name: 'webhook-signature', in: 'header', required: true, description: 'Space-separated `v1,<base64 HMAC-SHA256>` signatures.', schema: { type: 'string' }, example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=' },
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: schemaRef(schema),
            examples: {
              [kind === 'type' ? 'negative_balance' : 'pause_balance']: { summary: 'A balance went below zero', value: example },
              payment_failed: {
                summary: 'A charge failed (extra facts under data)',
                value:
                  kind === 'type'
                    ? { ...example, type: 'payment_failed', account_balance: 0, account_denomination: 'USD', data: { charge_id: IDS.charge, amount: 4900, reason: 'plan_renewal', failure_code: 'card_declined' } }
                    : { ...example, topic: 'payment_failed', balance: '0', denomination: 'USD', data: { charge_id: IDS.charge, amount: 4900, reason: 'plan_renewal', failure_code: 'card_declined' } },
              },
              spend_limit_reached: {
                summary: 'A notify spend limit was passed (once per period; the limit under data)',
                value:
                  kind === 'type'
                    ? { ...example, type: 'spend_limit_reached', account_balance: 87.5, account_denomination: 'credits', data: spendLimitData }
                    : { ...example, topic: 'spend_limit_reached', balance: '87.5', denomination: 'credits', data: spendLimitData },
              },
              card_changed: {
                summary: 'A card was saved through a hosted page (the new card and the one it replaced under data)',
                value:
                  kind === 'type'
                    ? { ...example, type: 'card_changed', account_balance: 0, account_denomination: 'USD', data: cardChangedData }
                    : { ...example, topic: 'card_changed', balance: '0', denomination: 'USD', data: cardChangedData },
              },
            },
          },
        },
      },
      responses: {
        '200': { description: 'Received. Any 2xx within 10 seconds counts; the body is ignored.' },
        '4XX': { description: 'A failed attempt, like any other non-2xx status, a redirect, or no answer within 10 seconds: retried with backoff for about a day.' },
      },
    },
  };
}

function build(): Json {
  const requestSchemas = registryToJson(REQUEST_SCHEMAS, 'input');
  for (const [name, schema] of Object.entries(requestSchemas)) describeFields(name, schema);
  const responseSchemas = registryToJson(RESPONSE_SCHEMAS, 'output');

  const usedResponses = new Set<string>();
  const paths: Json = {};
  for (const op of OPERATIONS) {
    paths[op.path] ??= {};
    paths[op.path][op.method] = buildOperation(op, usedResponses);
  }

  const responses: Json = {};
  for (const [status, name] of Object.entries(STATUS_RESPONSE)) {
    if (usedResponses.has(name)) responses[name] = errorResponse(Number(status), TYPES_BY_STATUS.get(Number(status))!);
  }

  const parameters: Json = {
    IdempotencyKey: {
      name: 'Idempotency-Key', in: 'header', required: false,
      description: 'Makes a retry safe for 24 hours: the same key with the same body returns the first response; with a different body it is 409.',
      schema: { type: 'string', minLength: 1, maxLength: 255 }, example: 'order-8812-topup',
    },
    XDedupeId: { name: 'X-DedupeId', in: 'header', required: false, description: 'Synonym of Idempotency-Key (used when Idempotency-Key is absent).', schema: { type: 'string', minLength: 1, maxLength: 255 } },
  };
  for (const [name, p] of Object.entries(PATH_PARAMS)) {
    const schema = name === 'denomination' ? toJson(denomination, 'input') : name === 'topic' ? toJson(topic, 'input') : p.schema;
    parameters[name] = { name, in: 'path', required: true, description: p.description, schema, example: p.example };
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Usage-based billing API',
      version: '1.0.0',
      summary: 'Accounts, balances, usage events, plans, refills, payments and webhooks.',
      description: DESCRIPTION,
    },
    servers: [{ url: '/', description: 'This server' }],
    security: [{ basicAuth: [] }],
    tags: TAGS.map((t) => ({ ...t })),
    paths,
    webhooks: { balanceNotificationByType: webhookOperation('type'), balanceNotificationByTopic: webhookOperation('topic') },
    components: {
      securitySchemes: {
        basicAuth: { type: 'http', scheme: 'basic', description: 'Username: the company id (`c_...`). Password: an API key.' },
        operatorBearer: { type: 'http', scheme: 'bearer', description: 'The operator token: `Authorization: Bearer <ADMIN_TOKEN>` (environment).' },
        webhookBasicAuth: { type: 'http', scheme: 'basic', description: 'Sent on deliveries when the webhook was registered with username and password.' },
      },
      schemas: { ...requestSchemas, ...responseSchemas },
      parameters,
      headers: {
        RequestId: { description: 'Id of this request (`req_...`); also in error bodies.', schema: { type: 'string', pattern: '^req_' } },
        Link: { description: 'Present when more items exist: `<url>; rel="next"`, the same query with starting_after set.', schema: { type: 'string' } },
        RetryAfter: { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } },
        WWWAuthenticate: { description: '`Basic realm="billing"` (or `Bearer realm="billing-admin"` on operator calls).', schema: { type: 'string' } },
        IdempotentReplayed: { description: '`true` when this is the stored response of an earlier request with the same Idempotency-Key.', schema: { type: 'string', enum: ['true'] } },
      },
      responses,
      examples: Object.fromEntries(
        (Object.keys(ERROR_EXAMPLES) as ErrorType[]).map((t) => [t, { summary: ERROR_EXAMPLES[t].summary, value: errorExampleBody(t) }]),
      ),
    },
  };
}

let cached: Json | null = null;

/** The OpenAPI 3.1 document, built once per process from the zod schemas. */
export function buildOpenApiDocument(): Json {
  cached ??= build();
  return cached;
}
