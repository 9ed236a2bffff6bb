'use server';
import { now } from '@/lib/clock';
import { accountCreate } from '@/lib/api/schemas/accounts';
import { balanceCreate, denominationParam } from '@/lib/api/schemas/balances';
import { changePlan as changePlanBody } from '@/lib/api/schemas/changeplan';
import { autoRefill } from '@/lib/api/schemas/refills';
import { spendLimit } from '@/lib/api/schemas/spend-limits';
import { setSpendLimits, type SpendLimit } from '@/lib/billing/balances/spend-limits';
import { createAccount, getAccount } from '@/lib/billing/accounts/accounts';
import { createCollectorLink } from '@/lib/billing/accounts/collector';
import { createPortalLink, revokeAccountPortalLinks, revokePortalLink } from '@/lib/billing/accounts/portal';
import { createOrGrantBalance, grantById, voidGrant } from '@/lib/billing/balances/grants';
import { changePlan, previewPlanChange } from '@/lib/billing/plans/change';
import type { PlanChangePreview } from '@/lib/billing/plans/change-decision';
import { getPlan } from '@/lib/billing/catalog/plans';
import { removeAutoRefill, setAutoRefill } from '@/lib/billing/refills/refills';
import { notFound } from '@/lib/errors';
import { consoleAction, field, FormInvalid, formValues, parseWith, type FieldError } from '@/lib/console/forms';
import { dollarsToCents, formatCents, formatTime, formatUnits } from '@/lib/console/format';

/** POST /v1/companies/{company_id}/accounts, from the console. */
export const createAccountAction = consoleAction(
  (fd) => {
    const v = formValues(fd);
    return parseWith(accountCreate, {
      name: v.name ?? '',
      email: v.email ?? '',
      ...(v.external_id ? { external_id: v.external_id } : {}),
      ...(v.plan_id ? { plan_id: v.plan_id } : {}),
      ...(v.enable_card_collector ? { enable_card_collector: true } : {}),
    });
  },
  async ({ db, company, input }) => {
    const { account, cardCollectorUrl } = await createAccount({ db, company: await company(), input });
    return {
      message: `Account ${account.name} created.`,
      link: { href: `/console/accounts/${account.id}`, label: `Open ${account.name}` },
      ...(cardCollectorUrl && { secret: { label: 'Card collector link: send it to the customer', value: cardCollectorUrl } }),
    };
  },
  { revalidate: '/console/accounts' },
);

/** POST /v1/accounts/{account_id}/balance/{denomination} with an amount: a recorded grant. */
export const grantUnitsAction = consoleAction(
  (fd) => {
    const v = formValues(fd);
    const denomination = parseWith(denominationParam, v.denomination ?? '', ['denomination']);
    return { denomination, ...parseWith(balanceCreate, { amount: v.amount ?? '', ...(v.reason ? { reason: v.reason } : {}) }) };
  },
  async ({ db, companyId, input: { denomination, amount, reason } }, accountId: string) => {
    const account = await getAccount({ db, companyId, accountId });
    const balance = await createOrGrantBalance({ db, companyId, accountId: account.id, denomination, amount, reason: reason ?? 'Granted in the console', now: now() });
    return `Granted ${formatUnits(amount ?? '0')} ${denomination}. The balance is now ${formatUnits(balance.amount)}.`;
  },
  { revalidate: (accountId) => `/console/accounts/${accountId}` },
);

/**
 * POST /v1/accounts/{account_id}/changeplan, after its preview: the first submission shows what
 * the change would charge and do; only a confirmation of that same figure changes the plan.
 */
export const changePlanAction = consoleAction(
  (fd) => ({ body: parseWith(changePlanBody, { plan_id: field(fd, 'plan_id') }), confirmed: field(fd, 'confirmed') }),
  async ({ db, companyId, company, input: { body, confirmed } }, accountId: string) => {
    const plan = await getPlan({ db, companyId, planId: body.plan_id });
    const request = { db, company: await company(), accountId, planId: body.plan_id, chosen: body.plan_variable_amounts };
    const preview = await previewPlanChange(request);
    const figure = `${preview.planId}:${preview.chargeAmount}`;
    if (confirmed !== figure) {
      return { message: describePreview(plan.name, preview), confirmation: { name: 'confirmed', value: figure, label: preview.chargeAmount > 0 ? `Confirm and charge ${formatCents(preview.chargeAmount)}` : 'Confirm change' } };
    }
    const account = await changePlan(request);
    if (account.scheduledPlanId === plan.id) {
      return `${plan.name} is cheaper, so the change is scheduled for the next renewal${account.nextPlanRenewal ? ` (${formatTime(account.nextPlanRenewal)})` : ''}.`;
    }
    if (account.planStatus === 'PENDING_PAYMENT_METHOD') return `${plan.name} starts once the customer has entered a card on the collector page.`;
    return `The account is now on ${plan.name}.`;
  },
  { revalidate: (accountId) => `/console/accounts/${accountId}` },
);

function describePreview(name: string, p: PlanChangePreview): string {
  if (p.kind === 'schedule_downgrade') return `${name} is cheaper: it would take over at the next renewal (${formatTime(p.nextPlanRenewal)}). Nothing is charged now.`;
  if (p.kind === 'attach_pending') return `${name} would start once the customer has entered a card on the collector page. Nothing is charged now.`;
  if (p.kind === 'cancel_downgrade') return `The account would stay on ${name} and the scheduled change would be dropped. Nothing is charged.`;
  const parts = [`${formatCents(p.priceAmount)} for the new period`];
  if (p.creditAmount) parts.push(`less ${formatCents(p.creditAmount)} credit for the unused time`);
  if (p.overageAmount) parts.push(`plus ${formatCents(p.overageAmount)} overage of the current plan`);
  const owed = Math.max(0, p.priceAmount - p.creditAmount) + p.overageAmount;
  if (owed > 0 && p.chargeAmount === 0) parts.push(`${formatCents(owed)} waived: below $0.50, the smallest card payment`);
  const levels = p.balances.filter((b) => b.managedByPlanId === p.planId).map((b) => `${formatUnits(b.amount)} ${b.denomination}`);
  return `${name} would start now and charge ${formatCents(p.chargeAmount)} (${parts.join(', ')}). Next renewal ${formatTime(p.nextPlanRenewal)}${levels.length ? `; balances reset to ${levels.join(', ')}` : ''}.`;
}

/** PUT /v1/accounts/{account_id}/balance/{denomination}/auto_refill. */
export const setRefillAction = consoleAction(
  (fd) => {
    const v = formValues(fd);
    const denomination = parseWith(denominationParam, v.denomination ?? '', ['denomination']);
    const config = parseWith(autoRefill, {
      amount: v.amount ?? '',
      usd_charge: dollarsToCents(String(v.usd_charge ?? '')),
      ...(v.refill_period ? { refill_period: v.refill_period } : {}),
      ...(v.threshold ? { threshold: v.threshold } : {}),
      ...(v.max_charges_per_month ? { max_charges_per_month: Number(v.max_charges_per_month) } : {}),
    }, [], /^usd_charge$/);
    return { denomination, config };
  },
  async ({ db, company, input: { denomination, config } }, accountId: string) => {
    const { balance, unchanged } = await setAutoRefill({ db, company: await company(), accountId, denomination, config, now: now() });
    if (unchanged) return `This monthly refill of ${balance.denomination} is already set; nothing was charged.`;
    const kinds = [
      config.refill_period === 'monthly' ? 'every month' : null,
      config.threshold ? `when available drops below ${formatUnits(config.threshold)}${config.max_charges_per_month ? ` (at most ${config.max_charges_per_month} a month)` : ''}` : null,
    ].filter(Boolean).join(' and ');
    return `Refill set: ${formatUnits(config.amount)} ${balance.denomination} for ${formatCents(config.usd_charge)} ${kinds}.${config.refill_period === 'monthly' ? ' The first refill was made now.' : ''}`;
  },
  { revalidate: (accountId) => `/console/accounts/${accountId}` },
);

/**
 * PUT /v1/accounts/{account_id}/spend_limits, from the rows of the spend limits form
 * (`limits[i].denomination` ...): a row left empty is no limit; every row kept is checked as the
 * API checks it, errors named by the row's own fields.
 */
export const setSpendLimitsAction = consoleAction(
  (fd) => {
    const rows = (formValues(fd).limits ?? []) as (Record<string, unknown> | undefined)[];
    const limits: SpendLimit[] = [];
    const errors: FieldError[] = [];
    const seen = new Set<string>();
    rows.forEach((row, i) => {
      // A row with nothing but its selects' defaults is an empty row.
      if (!row || (row.denomination === undefined && row.limit === undefined)) return;
      try {
        const l = parseWith(spendLimit, row, ['limits', i]);
        const k = `${l.denomination}\u0000${l.period}\u0000${l.action}`;
        if (seen.has(k)) errors.push({ param: `limits[${i}].period`, message: `A second ${l.action} limit for ${l.denomination} per ${l.period}: keep one.` });
        seen.add(k);
        limits.push(l);
      } catch (err) {
        if (!(err instanceof FormInvalid)) throw err;
        errors.push(...err.errors);
      }
    });
    if (errors.length) throw new FormInvalid(errors);
    return limits;
  },
  async ({ db, companyId, input }, accountId: string) => {
    const set = await setSpendLimits({ db, companyId, accountId, limits: input, now: now() });
    return set.length ? `${set.length} spend limit${set.length === 1 ? '' : 's'} set.` : 'Spend limits cleared.';
  },
  { revalidate: (accountId) => `/console/accounts/${accountId}` },
);

/** DELETE /v1/accounts/{account_id}/balance/{denomination}/auto_refill. */
export const removeRefillAction = consoleAction(
  null,
  async ({ db, company }, accountId: string, denomination: string) => {
    await removeAutoRefill({ db, company: await company(), accountId, denomination, now: now() });
    return `Refills of ${denomination} are off.`;
  },
  { revalidate: (accountId) => `/console/accounts/${accountId}` },
);

/** POST /v1/accounts/{account_id}/card_collector. */
export const collectorLinkAction = consoleAction(
  null,
  async ({ db, companyId }, accountId: string) => {
    const account = await getAccount({ db, companyId, accountId });
    const url = await createCollectorLink({ db, accountId: account.id, now: now() });
    return { secret: { label: `Card collector link for ${account.name}`, value: url } };
  },
  { revalidate: (accountId) => `/console/accounts/${accountId}` },
);

/** POST /v1/accounts/{account_id}/portal_link. */
export const portalLinkAction = consoleAction(null, async ({ db, companyId }, accountId: string) => {
  const account = await getAccount({ db, companyId, accountId });
  const link = await createPortalLink({ db, accountId: account.id, now: now() });
  return { message: `Send it to the customer: it works until ${formatTime(link.expiresAt)}.`, secret: { label: `Customer portal link for ${account.name}`, value: link.url } };
}, { revalidate: (accountId) => `/console/accounts/${accountId}` });

/** DELETE /v1/portal_links/{portal_link_id}: the link stops working at once. */
export const revokePortalLinkAction = consoleAction(
  null,
  async ({ db, companyId }, accountId: string, linkId: string) => {
    const link = await revokePortalLink({ db, companyId, linkId, now: now() });
    return `The portal link made ${formatTime(link.createdAt)} no longer works.`;
  },
  { revalidate: (accountId) => `/console/accounts/${accountId}` },
);

/** POST /v1/accounts/{account_id}/portal_links/revoke: every live link of the account stops working. */
export const revokeAllPortalLinksAction = consoleAction(
  null,
  async ({ db, companyId }, accountId: string) => {
    const account = await getAccount({ db, companyId, accountId });
    const revoked = await revokeAccountPortalLinks({ db, accountId: account.id, now: now() });
    return revoked ? `${revoked} portal link${revoked === 1 ? '' : 's'} of ${account.name} no longer work${revoked === 1 ? 's' : ''}.` : `${account.name} had no live portal link.`;
  },
  { revalidate: (accountId) => `/console/accounts/${accountId}` },
);

/** POST /v1/grants/{grant_id}/void: what is left of the grant is taken away (one void ledger row). */
export const voidGrantAction = consoleAction(
  null,
  async ({ db, companyId }, accountId: string, grantId: string) => {
    // Only a grant of this account (of the signed-in company): another one is not found.
    const found = await grantById(db, companyId, grantId);
    if (!found || found.accountId !== accountId) throw notFound('grant', 'grant_id');
    const g = await db.transaction((tx) => voidGrant(tx, { companyId, grantId }, now()));
    return `Grant ${g.id} is void; ${formatUnits(g.amount)} ${g.denomination} granted, nothing left to spend.`;
  },
  { revalidate: (accountId) => `/console/accounts/${accountId}` },
);
