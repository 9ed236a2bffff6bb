import type { z } from 'zod';
import type { ExactNumber } from '../../money';
import type { serializeAccount } from '../../billing/accounts/accounts';
import type { serializePaymentMethod } from '../../billing/accounts/cards';
import type { serializePortalLink } from '../../billing/accounts/portal';
import type { serializeBalance, serializeTransaction } from '../../billing/balances/balances';
import type { serializeGrant } from '../../billing/balances/grants';
import type { serializeCharge } from '../../billing/charges/charges';
import type { serializeApiKey, serializeCompany } from '../../billing/companies/companies';
import type { serializeEvent } from '../../billing/events/events';
import type { serializeCheck } from '../../billing/events/check';
import type { serializeSpendLimit } from '../../billing/balances/spend-limits';
import type { serializePlanChangePreview } from '../../billing/plans/change';
import type { serializePlan } from '../../billing/catalog/plans';
import type { serializeUsageRow } from '../../billing/usage/usage';
import type { serializeAttempt, serializeDelivery } from '../../billing/webhooks/deliveries';
import type { serializeWebhook } from '../../billing/webhooks/webhooks';
import type * as documented from './responses';

/**
 * Every serializer answers its documented response record, checked by `tsc`: a field the
 * reference lacks, a documented field left out, or a value of another type fails the
 * typecheck, where the serializer is written, instead of at the first real call. The
 * serializers live in the domain, which may not import the wire (lib/architecture.test.ts), so
 * the check is made here, on their inferred return types.
 */

/** The fields of `Out` that `Doc` does not document, at any depth, as paths (`cost.amount`); never when there are none. */
export type Undocumented<Out, Doc, Path extends string = ''> = [unknown] extends [Doc]
  ? never
  : Out extends readonly (infer Item)[]
    ? Undocumented<Item, ItemOf<Doc>, `${Path}[]`>
    : Out extends object
      ? { [K in keyof Out & string]-?: K extends KeysOf<Doc> ? Undocumented<Out[K], PropOf<Doc, K>, `${Path}${K}.`> : `${Path}${K}` }[keyof Out & string]
      : never;

type ItemOf<Doc> = Doc extends readonly (infer Item)[] ? Item : never;
type KeysOf<Doc> = Doc extends readonly unknown[] ? never : Doc extends object ? keyof Doc : never;
type PropOf<Doc, K extends string> = Doc extends readonly unknown[] ? never : Doc extends object ? (K extends keyof Doc ? Doc[K] : never) : never;

/** The documented fields `Out` leaves out or answers with another type. */
type Mismatched<Out, Doc> = {
  [K in KeysOf<Doc> & string]-?: K extends keyof Out ? ([Out[K]] extends [PropOf<Doc, K>] ? never : K) : undefined extends PropOf<Doc, K> ? never : K;
}[KeysOf<Doc> & string];

/** `true` when `Out` is a valid `Doc` with no field `Doc` lacks; otherwise what is wrong. */
export type Conforms<Out, Doc> = [Out] extends [Doc]
  ? [Undocumented<Out, Doc>] extends [never]
    ? true
    : { undocumented: Undocumented<Out, Doc> }
  : { missingOrMistyped: Mismatched<Out, Doc> };

/** Fails the typecheck, showing what is wrong, unless `T` is `true`. */
export type Expect<T extends true> = T;

/** A value as JSON carries it: an ExactNumber is written as a number literal (`stringifyJson`). */
type Wire<T> = T extends ExactNumber ? number : T extends readonly (infer Item)[] ? Wire<Item>[] : T extends object ? { [K in keyof T]: Wire<T[K]> } : T;

type Answer<F extends (...args: never[]) => unknown> = Wire<ReturnType<F>>;
type Record_<S extends z.ZodType> = z.output<S>;

export type SerializersConform = [
  Expect<Conforms<Answer<typeof serializeAccount>, Record_<typeof documented.account>>>,
  Expect<Conforms<Answer<typeof serializePaymentMethod>, Record_<typeof documented.cardAttached>>>,
  Expect<Conforms<Answer<typeof serializePortalLink>, Record_<typeof documented.portalLinkRecord>>>,
  Expect<Conforms<Answer<typeof serializeBalance>, Record_<typeof documented.balance>>>,
  Expect<Conforms<Answer<typeof serializeTransaction>, Record_<typeof documented.transaction>>>,
  Expect<Conforms<Answer<typeof serializeGrant>, Record_<typeof documented.grant>>>,
  Expect<Conforms<Answer<typeof serializeCharge>, Record_<typeof documented.charge>>>,
  Expect<Conforms<Answer<typeof serializeCompany>, Record_<typeof documented.company>>>,
  Expect<Conforms<Answer<typeof serializeApiKey>, Record_<typeof documented.apiKey>>>,
  Expect<Conforms<Answer<typeof serializeEvent>, Record_<typeof documented.event>>>,
  Expect<Conforms<Answer<typeof serializeCheck>, Record_<typeof documented.checkResult>>>,
  Expect<Conforms<Answer<typeof serializeSpendLimit>, Record_<typeof documented.spendLimitRecord>>>,
  Expect<Conforms<Answer<typeof serializePlan>, Record_<typeof documented.plan>>>,
  Expect<Conforms<Answer<typeof serializePlanChangePreview>, Record_<typeof documented.planChangePreview>>>,
  Expect<Conforms<Answer<typeof serializeUsageRow>, Record_<typeof documented.usageRow>>>,
  Expect<Conforms<Answer<typeof serializeDelivery>, Record_<typeof documented.delivery>>>,
  Expect<Conforms<Answer<typeof serializeAttempt>, Record_<typeof documented.deliveryAttempt>>>,
  // The signing secret is in the answer of the call that created the webhook only.
  Expect<Conforms<Answer<typeof serializeWebhook>, Record_<typeof documented.webhook> | Record_<typeof documented.webhookWithSecret>>>,
];
