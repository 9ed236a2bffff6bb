import { describe, expect, it } from 'vitest';
import { fieldLabel, parseRateCard, previewPrice, rateCardInput, rateCardRows, type RuleRow } from './rate-card-form';

const form = (fields: Record<string, string>) => {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  return fd;
};

/** An LLM call priced by model: input tokens in graduated tiers, output tokens per unit. */
const llm: RuleRow[] = [
  {
    type: 'llm',
    denomination: 'usd',
    amount: '',
    filters: [{ key: 'model', value: 'big', kind: 'text' }],
    components: [
      {
        quantity: 'input_tokens',
        price: 'graduated',
        tiers: [
          { up_to: '1000', unit_amount: '0.001', flat_amount: '' },
          { up_to: '', unit_amount: '0.0005', flat_amount: '0.1' },
        ],
      },
      { quantity: 'output_tokens', price: 'unit', unit_amount: '0.002' },
    ],
  },
  { type: 'llm', denomination: 'usd', amount: '0.01' },
];

describe('the plan form rate card', () => {
  it('reads the editor fields into the API billing rules, each price kind in its shape', () => {
    const rows = rateCardRows(
      form({
        'billing_rules[0].type': 'llm',
        'billing_rules[0].denomination': 'usd',
        'billing_rules[0].filters[0].key': 'tier',
        'billing_rules[0].filters[0].kind': 'number',
        'billing_rules[0].filters[0].value': '2',
        'billing_rules[0].components[0].quantity': 'input_tokens',
        'billing_rules[0].components[0].price': 'volume',
        'billing_rules[0].components[0].tiers[0].up_to': '10',
        'billing_rules[0].components[0].tiers[0].unit_amount': '1',
        'billing_rules[0].components[0].tiers[1].up_to': '',
        'billing_rules[0].components[0].tiers[1].unit_amount': '0.5',
        'billing_rules[0].components[0].tiers[1].flat_amount': '3',
        'billing_rules[0].components[1].quantity': 'images',
        'billing_rules[0].components[1].price': 'package',
        'billing_rules[0].components[1].package.size': '5',
        'billing_rules[0].components[1].package.amount': '2',
        // An untouched row (the form starts with one) is left out; the next keeps its own number in errors.
        'billing_rules[1].type': '',
        'billing_rules[1].amount': '',
        'billing_rules[1].denomination': '',
        'billing_rules[2].type': 'search',
        'billing_rules[2].amount': '1',
        'billing_rules[2].denomination': 'credits',
        'billing_rules[0].__proto__': 'x',
      }),
    );
    const card = rateCardInput(rows);
    expect(card.errors).toEqual([]);
    expect(card.original).toEqual([0, 2]);
    expect(parseRateCard(rows)).toEqual({
      errors: [],
      rules: [
        {
          type: 'llm',
          denomination: 'usd',
          amount: '0',
          filters: { tier: 2 },
          components: [
            { quantity: 'input_tokens', tiers_mode: 'volume', tiers: [{ up_to: '10', unit_amount: '1' }, { up_to: null, unit_amount: '0.5', flat_amount: '3' }] },
            { quantity: 'images', package: { size: '5', amount: '2' } },
          ],
        },
        { type: 'search', denomination: 'credits', amount: '1' },
      ],
    });
  });

  it("names each error by the field the form shows, the API's message kept", () => {
    const rows: RuleRow[] = [
      { type: '', amount: '', denomination: '' },
      {
        type: 'llm',
        denomination: 'usd',
        filters: [
          { key: 'model', value: 'x'.repeat(201), kind: 'text' },
          { key: 'tier', value: 'two', kind: 'number' },
          { key: 'bad key', value: '1', kind: 'text' },
        ],
        components: [{ quantity: 'in', price: 'graduated', tiers: [{ up_to: '10', unit_amount: '1' }, { up_to: '5', unit_amount: '1' }, { up_to: '', unit_amount: '-1' }] }],
      },
    ];
    const { errors } = parseRateCard(rows);
    expect(errors).toEqual(
      expect.arrayContaining([
        { param: 'billing_rules[1].filters[1].value', message: 'Enter a number, such as 4 or 0.5.' },
        { param: 'billing_rules[1].filters[2].key', message: 'A name is 1 to 64 letters, digits, and . _ : -.' },
        { param: 'billing_rules[1].filters[0].value', message: 'billing_rules[1].filters[0].value must be at most 200 characters' },
        { param: 'billing_rules[1].components[0].tiers[1].up_to', message: "billing_rules[1].components[0].tiers[1].up_to must be greater than the tier before's up_to (10): tiers go in ascending order." },
        { param: 'billing_rules[1].components[0].tiers[2].unit_amount', message: 'billing_rules[1].components[0].tiers[2].unit_amount must not be negative' },
      ]),
    );
    expect(errors).toHaveLength(5);
    expect(fieldLabel(errors.find((e) => e.param?.endsWith('tiers[1].up_to'))!)).toBe("Rule 2, component 1, tier 2, up to: must be greater than the tier before's up_to (10): tiers go in ascending order.");
  });

  it('asks a flat rule for its amount, a rule with components not', () => {
    expect(parseRateCard([{ type: 'q', denomination: 'credits', amount: '' }]).errors).toEqual([
      { param: 'billing_rules[0].amount', message: 'billing_rules[0].amount must be a finite number with at most 12 decimals' },
    ]);
    expect(parseRateCard([{ type: 'q', denomination: 'credits', components: [{ quantity: 'n', price: 'unit', unit_amount: '2' }] }]).errors).toEqual([]);
  });

  it('previews the price of a sample event by the first matching rule, graduated tiers from zero', () => {
    const big = previewPrice(llm, { type: 'llm', quantities: [{ name: 'input_tokens', value: '1500' }, { name: 'output_tokens', value: '100' }], properties: [{ key: 'model', value: 'big', kind: 'text' }] });
    // 1000 × 0.001 + 500 × 0.0005 + 0.1 (the second tier's flat fee, entered) = 1.35; 100 × 0.002 = 0.2.
    expect(big).toEqual({
      status: 'priced',
      rule: 0,
      baseAmount: '0',
      quantityNames: ['input_tokens', 'output_tokens'],
      price: { rule: 0, denomination: 'usd', amount: '1.55', graduated: true, components: [{ quantity: '1500', amount: '1.35' }, { quantity: '100', amount: '0.2' }] },
    });
    const other = previewPrice(llm, { type: 'llm', quantities: [], properties: [{ key: 'model', value: 'mini', kind: 'text' }] });
    expect(other).toMatchObject({ status: 'priced', rule: 1, price: { amount: '0.01', components: [] } });
    expect(previewPrice(llm, { type: 'image', quantities: [], properties: [] })).toEqual({ status: 'unpriced' });
    expect(previewPrice(llm, { type: 'llm', quantities: [{ name: 'input_tokens', value: '-1' }], properties: [] })).toEqual({
      status: 'invalid',
      errors: [{ param: 'quantities.input_tokens', message: 'quantities.input_tokens must not be negative' }],
    });
  });

  it('shows no price for a rate card with an error in it', () => {
    const broken = structuredClone(llm);
    broken[0].components![0].tiers![0].up_to = '';
    const p = previewPrice(broken, { type: 'llm', quantities: [], properties: [] });
    expect(p).toEqual({ status: 'invalid', errors: [{ param: 'billing_rules[0].components[0].tiers[0].up_to', message: 'billing_rules[0].components[0].tiers[0].up_to may be null only on the last tier.' }] });
  });
});
