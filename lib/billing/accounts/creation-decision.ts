import type { Account, PaymentMethodSummary } from '../../db/schema';
import { ApiError, invalid } from '../../errors';
import type { Charge } from '../charges/charges';
import { splitForCard } from '../../money';
import { periodChargeFor, type Plan } from '../catalog/plans';

/** Everything account creation decides on, read before anything is written or sent to the processor. */
export type AccountCreationFacts = {
  plan: Plan | null;
  chosen: Record<string, string> | null;
  /** enable_card_collector: the plan waits for a card the end customer enters. */
  collector: boolean;
  /** Whether the company has a payment processor key. */
  hasProcessor: boolean;
  /** Whether the request sends a card token. */
  token: boolean;
  /** The default card of the processor customer the request names, when it sends no token. */
  paymentMethod: PaymentMethodSummary | null;
  /** The account and plan charge an earlier attempt of this request (same Idempotency-Key) made. */
  earlier: { account: Account; charge: Charge } | null;
};

/**
 * What account creation does. `open` makes an account without a plan; `attach_pending` attaches
 * the plan for when the card collector's form is completed; `start` starts the plan at once,
 * charging `charge` first (a free plan starts without a charge).
 */
export type AccountCreationDecision =
  | { kind: 'resume'; account: Account; charge: Charge }
  | { kind: 'open'; collector: boolean }
  | { kind: 'attach_pending'; plan: Plan }
  | { kind: 'start'; plan: Plan; charge: number }
  | { kind: 'conflict'; error: ApiError };

/**
 * Account creation, decided: with a plan the account starts billing at once, at the period
 * charge of the chosen amounts, so a plan that charges needs payment information (a card token,
 * a processor customer with a default card, or the card collector). A retried request carries
 * on with the account and charge of its first attempt.
 */
export function decideAccountCreation(f: AccountCreationFacts): AccountCreationDecision {
  const { plan } = f;
  if (plan && !f.collector && f.earlier) return { kind: 'resume', account: f.earlier.account, charge: f.earlier.charge };
  if ((f.collector || f.token) && !f.hasProcessor) {
    return { kind: 'conflict', error: invalid('The company has no payment processor key, so cards cannot be collected.', f.collector ? 'enable_card_collector' : 'token') };
  }
  if (!plan) return { kind: 'open', collector: f.collector };
  if (f.collector) return { kind: 'attach_pending', plan };
  // A price below the smallest card payment is not charged now: it is carried to the first renewal.
  const charge = periodChargeFor(plan, f.chosen);
  if (splitForCard(charge).charge > 0 && !f.token && !f.paymentMethod) {
    return {
      kind: 'conflict',
      error: new ApiError(
        'payment_method_required',
        `Plan ${plan.name} charges ${charge} cents per period: send a card token, a processor_id whose customer has a default card, or enable_card_collector.`,
        'token',
      ),
    };
  }
  return { kind: 'start', plan, charge };
}

/** What a card saved for an account does to a plan that waits for one. */
export type PendingPlanDecision =
  | { kind: 'none' }
  | { kind: 'start'; plan: Plan; chosen: Record<string, string> | null; charge: number }
  | { kind: 'wait'; chargeId: string };

/**
 * The second half of an account created with the card collector: once a card is saved, the plan
 * that waited for it starts at the period charge of the chosen amounts. An account whose plan is
 * not waiting (started already by another link, or never attached) is left as it is. While an
 * earlier start charge's outcome is unknown (another link's card), nothing is charged: that
 * charge starts the plan if it was paid, and a second one could be paid too.
 */
export function decidePendingPlanStart({
  account,
  plan,
  pendingPlanChargeId = null,
}: {
  account: Pick<Account, 'planId' | 'planStatus' | 'planVariableAmounts'>;
  plan: Plan | null;
  pendingPlanChargeId?: string | null;
}): PendingPlanDecision {
  if (!account.planId || account.planStatus !== 'PENDING_PAYMENT_METHOD' || !plan || plan.id !== account.planId) return { kind: 'none' };
  if (pendingPlanChargeId) return { kind: 'wait', chargeId: pendingPlanChargeId };
  const chosen = (account.planVariableAmounts as Record<string, string> | null) ?? null;
  return { kind: 'start', plan, chosen, charge: periodChargeFor(plan, chosen) };
}
