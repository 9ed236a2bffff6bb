import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import Decimal from 'decimal.js';
import { useTestDatabase } from '../../testing/harness';
import { query, sql } from '../../db/client';
import { priceEvent, type BillingRule, type Component, type Properties, type Quantities } from './rate-card';
import { rateCardPrice } from './pricing';

/**
 * The rate card has one TypeScript form (rate-card.ts) and one SQL form (`rateCardPrice`, which
 * the single-event statement and the batch pricing use, on the functions of
 * drizzle/0031_usage_functions.sql): random rate cards, events and graduated counts must price to
 * the same rule, components and amounts, to the last of 12 decimals; so must `rate_card_event`.
 */

const t = useTestDatabase();

const dec = (max: number, scale: number) => fc.integer({ min: 0, max }).map((n) => new Decimal(n).div(10 ** scale).toFixed());
const price = fc.oneof(dec(1000, 2), dec(10 ** 9, 12), dec(50, 0));
const qty = fc.oneof(dec(5000, 0), dec(10 ** 8, 6), dec(10 ** 12, 12), fc.constant('0'));
const qName = fc.constantFrom('input_tokens', 'output_tokens', 'images', 'seconds');
const propValue = fc.oneof(fc.constantFrom('gpt-4o', 'gpt-4o-mini', 'claude', 'eu', 'us'), fc.constantFrom(1, 2, 2.5), fc.boolean());

const tiers = fc
  .uniqueArray(fc.integer({ min: 1, max: 20000 }), { minLength: 0, maxLength: 3 })
  .chain((bounds) =>
    fc.tuple(
      ...[...bounds.sort((a, b) => a - b).map((b) => new Decimal(b).div(10).toFixed()), null].map((up) =>
        fc.record({ up_to: fc.constant(up), unit_amount: price, flat_amount: fc.option(price, { nil: undefined }) }),
      ),
    ),
  )
  .map((ts) => ts.map((x) => (x.flat_amount === undefined ? { up_to: x.up_to, unit_amount: x.unit_amount } : x)));

const component: fc.Arbitrary<Component> = fc.oneof(
  fc.record({ quantity: qName, unit_amount: price }),
  fc.record({ quantity: qName, tiers, tiers_mode: fc.constantFrom('graduated' as const, 'volume' as const) }),
  fc.record({ quantity: qName, package: fc.record({ size: fc.oneof(dec(1000, 0).map((s) => (s === '0' ? '1' : s)), fc.constantFrom('0.3', '1000000', '0.000000000007')), amount: price }) }),
);

const rule: fc.Arbitrary<BillingRule> = fc
  .record({
    type: fc.constantFrom('llm', 'image'),
    denomination: fc.constantFrom('credits', 'usd_micros'),
    amount: fc.option(price, { nil: undefined }),
    filters: fc.option(fc.dictionary(fc.constantFrom('model', 'region', 'tier', 'batch'), fc.oneof(propValue, fc.array(propValue, { minLength: 1, maxLength: 3 })), { maxKeys: 2 }), { nil: undefined }),
    components: fc.option(fc.array(component, { maxLength: 3 }), { nil: undefined }),
  })
  .map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)) as BillingRule);

const event = fc.record({
  type: fc.constantFrom('llm', 'image', 'other'),
  quantities: fc.dictionary(qName, qty, { maxKeys: 4 }) as fc.Arbitrary<Quantities>,
  properties: fc.dictionary(fc.constantFrom('model', 'region', 'tier', 'batch'), propValue, { maxKeys: 4 }) as fc.Arbitrary<Properties>,
  used: fc.dictionary(fc.constantFrom('0.0', '0.1', '1.0', '1.2', '2.0', '3.1'), qty, { maxKeys: 4 }),
});

describe('the rate card in TypeScript and in SQL', () => {
  it('price every event alike', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(rule, { minLength: 1, maxLength: 5 }), fc.array(event, { minLength: 1, maxLength: 12 }), async (rules, evs) => {
        const rows = await query<{ ord: string; p: unknown; f: unknown }>(
          t.database.db,
          sql`select v.ord, ${rateCardPrice({ rules: sql`${JSON.stringify(rules)}::jsonb`, type: sql`(v.e->>'type')`, quantities: sql`(v.e->'quantities')`, properties: sql`(v.e->'properties')`, used: sql`(v.e->'used')` })} as p,
              rate_card_event(${JSON.stringify(rules)}::jsonb, v.e->>'type', v.e->'quantities', v.e->'properties', v.e->'used') as f
            from jsonb_array_elements(${JSON.stringify(evs)}::jsonb) with ordinality as v(e, ord) order by v.ord`,
        );
        const parse = (x: unknown) => (typeof x === 'string' ? JSON.parse(x) : x);
        const want = evs.map((e) => priceEvent(rules, e.type, e.quantities, e.properties, e.used));
        expect(rows.map((r) => parse(r.p))).toEqual(want);
        expect(rows.map((r) => parse(r.f))).toEqual(want);
      }),
      { numRuns: Number(process.env.RATE_CARD_RUNS ?? 150) },
    );
  }, 300_000);

  it('prices a known LLM card to the cent and the flat of each tier once', async () => {
    const rules: BillingRule[] = [
      { type: 'llm', denomination: 'usd', filters: { model: 'big' }, components: [{ quantity: 'input_tokens', unit_amount: '0.000003' }, { quantity: 'output_tokens', unit_amount: '0.000015' }] },
      { type: 'llm', denomination: 'usd', components: [{ quantity: 'input_tokens', tiers_mode: 'graduated', tiers: [{ up_to: '1000', unit_amount: '0', flat_amount: '0' }, { up_to: null, unit_amount: '0.001', flat_amount: '2' }] }] },
      { type: 'img', denomination: 'usd', components: [{ quantity: 'images', package: { size: '10', amount: '0.5' } }, { quantity: 'px', tiers_mode: 'volume', tiers: [{ up_to: '100', unit_amount: '1' }, { up_to: null, unit_amount: '0.5', flat_amount: '3' }] }] },
      // Flat: priced without the pricing functions, to the same answer.
      { type: 'call', denomination: 'credits', amount: '0.0100' },
    ];
    const cases: { type: string; q: Quantities; p: Properties; used: Record<string, string> }[] = [
      { type: 'llm', q: { input_tokens: '1200', output_tokens: '350' }, p: { model: 'big' }, used: {} },
      { type: 'llm', q: { input_tokens: '1200' }, p: { model: 'small' }, used: { '1.0': '500' } },
      { type: 'img', q: { images: '11', px: '150' }, p: {}, used: {} },
      { type: 'call', q: { input_tokens: '5' }, p: { model: 'big' }, used: {} },
    ];
    const want = [
      { rule: 0, denomination: 'usd', amount: '0.00885', components: [{ quantity: '1200', amount: '0.0036' }, { quantity: '350', amount: '0.00525' }], graduated: false },
      // 500 free units left in the first tier, 700 at 0.001, and the second tier's flat 2 once.
      { rule: 1, denomination: 'usd', amount: '2.7', components: [{ quantity: '1200', amount: '2.7' }], graduated: true },
      { rule: 2, denomination: 'usd', amount: '79', components: [{ quantity: '11', amount: '1' }, { quantity: '150', amount: '78' }], graduated: false },
      { rule: 3, denomination: 'credits', amount: '0.01', components: [], graduated: false },
    ];
    for (const [i, c] of cases.entries()) {
      expect(priceEvent(rules, c.type, c.q, c.p, c.used)).toEqual(want[i]);
      const [row] = await query<{ p: unknown }>(
        t.database.db,
        sql`select ${rateCardPrice({ rules: sql`${JSON.stringify(rules)}::jsonb`, type: sql`${c.type}::text`, quantities: sql`${JSON.stringify(c.q)}::jsonb`, properties: sql`${JSON.stringify(c.p)}::jsonb`, used: sql`${JSON.stringify(c.used)}::jsonb` })} as p`,
      );
      expect(typeof row.p === 'string' ? JSON.parse(row.p) : row.p).toEqual(want[i]);
    }
  });
});
