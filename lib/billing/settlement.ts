import type { Db } from '../db/client';
import type { TransactionType } from '../db/schema';
import { costBasisOf, grantUnits } from './balances/balances';
import {
  chargeAccount,
  reconcilePendingCharges,
  resumeCharge,
  type ChargeOutcome,
  type ChargeRequest,
  type Handlers,
} from './charges/charges';
import { applyPlanActivation, applyRenewal, applyRenewalFailure, type ActivatePlanEffect, type RenewPlanEffect } from './plans/attach';
import { applyRefill, applyRefillFailure, type RefillEffect } from './refills/complete';

/**
 * Binds the payment primitive (charges/) to what the service sells. A charge stores what it pays
 * for as one of these effects; the handler of its kind applies it exactly once, in the
 * transaction that marks the charge paid (or, for a failure handler, failed), whether that is
 * at once or when the reconciler learns the outcome days later.
 */
export type Effect = GrantEffect | ActivatePlanEffect | RenewPlanEffect | RefillEffect;

/**
 * What a deposit pays for: units on one balance, as a paid grant (its cost basis the charge's
 * cents per unit), expiring at `expires_at` when the deposit named one, drawn at its `priority`.
 */
export type GrantEffect = { kind: 'grant'; denomination: string; amount: string; type: string; description: string; expires_at?: string | null; priority?: number };

const handlers: Handlers<Effect> = {
  grant: {
    paid: async (tx, charge, e, now) => {
      await grantUnits(
        tx,
        {
          companyId: charge.companyId,
          accountId: charge.accountId,
          denomination: e.denomination,
          amount: e.amount,
          category: 'paid',
          source: 'deposit',
          costBasis: costBasisOf(charge.amount, e.amount),
          priority: e.priority,
          expiresAt: e.expires_at ? new Date(e.expires_at) : null,
          type: e.type as TransactionType,
          description: e.description,
          chargeId: charge.id,
        },
        now,
      );
    },
  },
  activate_plan: { paid: applyPlanActivation },
  renew_plan: { paid: applyRenewal, failed: applyRenewalFailure },
  refill: { paid: applyRefill, failed: applyRefillFailure },
};

/** Charges the account's card for what `effects` pay for (see chargeAccount). */
export function chargeFor(req: Omit<ChargeRequest<Effect>, 'handlers'>): Promise<ChargeOutcome> {
  return chargeAccount({ ...req, handlers });
}

/** Carries on with a charge an earlier attempt of a request made (see resumeCharge). */
export function resumeChargeFor(args: Omit<Parameters<typeof resumeCharge<Effect>>[0], 'handlers'>): Promise<ChargeOutcome> {
  return resumeCharge({ ...args, handlers });
}

/** The worker task: charges whose outcome was unknown are settled with what they pay for. */
export function reconcileCharges(db: Db, now: Date, opts: { stopping?: () => boolean } = {}): Promise<number> {
  return reconcilePendingCharges(db, now, { ...opts, handlers });
}
