import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import type { Conforms, Expect, SerializersConform } from './serializers';
import type { event } from './responses';
import { charge as chargeSchema } from './responses';
import { serializeCharge } from '../../billing/charges/charges';

// The type checks are made by `tsc` (npm run typecheck), which reads test files too.

type Charge = z.output<typeof chargeSchema>;
type Event = z.output<typeof event>;

describe('serializers against the documented records', () => {
  it('every serializer conforms', () => {
    expectTypeOf<SerializersConform[number]>().toEqualTypeOf<true>();
  });

  it('names every serializer of the domain', () => {
    const root = path.resolve(__dirname, '../../billing');
    const files = (fs.readdirSync(root, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    const serializers = files.flatMap((f) => [...fs.readFileSync(path.join(root, f), 'utf8').matchAll(/^export function (serialize\w+)/gm)].map((m) => m[1]));
    const checked = fs.readFileSync(path.join(__dirname, 'serializers.ts'), 'utf8');
    expect(serializers.length).toBeGreaterThan(10);
    expect(serializers.filter((name) => !checked.includes(`typeof ${name}>`))).toEqual([]);
  });

  it('a field the reference lacks fails the typecheck, at any depth', () => {
    // @ts-expect-error an undocumented field is not a documented record
    expectTypeOf<Conforms<Charge & { refunded: boolean }, Charge>>().toEqualTypeOf<true>();
    expectTypeOf<Conforms<Charge & { refunded: boolean }, Charge>>().toEqualTypeOf<{ undocumented: 'refunded' }>();
    type WithCurrency = Omit<Event, 'cost'> & { cost: { amount: number; denomination: string; currency: string } | null };
    expectTypeOf<Conforms<WithCurrency, Event>>().toEqualTypeOf<{ undocumented: 'cost.currency' }>();
    // @ts-expect-error Expect refuses anything but a conforming record
    type Refused = Expect<Conforms<Charge & { refunded: boolean }, Charge>>;
    expectTypeOf<Refused>().not.toBeNever();
  });

  it('a documented field left out or answered with another type fails the typecheck', () => {
    expectTypeOf<Conforms<Omit<Charge, 'failure_code'>, Charge>>().toEqualTypeOf<{ missingOrMistyped: 'failure_code' }>();
    expectTypeOf<Conforms<Omit<Charge, 'status'> & { status: string }, Charge>>().toEqualTypeOf<{ missingOrMistyped: 'status' }>();
  });

  it('a serialized charge is the documented record at run time too', () => {
    const at = new Date('2027-03-01T09:00:00Z');
    const body = serializeCharge({
      id: 'ch_1', companyId: 'c_1', accountId: 'a_1', amount: 500, currency: 'usd', reason: 'deposit', description: 'Deposit', status: 'succeeded',
      processorPaymentIntentId: 'pi_1', processorPaymentMethodId: 'pm_1', cardBrand: 'visa', cardLast4: '4242', failureCode: null, failureMessage: null, metadata: {}, workKey: null, firstSentAt: at, lastSentAt: at, sendCount: 1, createdAt: at, updatedAt: at,
    });
    expect(chargeSchema.parse(body)).toEqual(body);
  });
});
