'use client';
import { ActionForm, CheckboxField, Field, SelectField, type FormAction } from './action-form';

export type PlanOption = { id: string; name: string; summary: string; charge: number };

export function NewAccountForm({ action, plans }: { action: FormAction; plans: PlanOption[] }) {
  return (
    <ActionForm action={action} submitLabel="Create account" pendingLabel="Creating…" label="New account">
      <Field name="name" label="Name" autoComplete="off" required />
      <Field name="email" label="Email" type="email" autoComplete="off" required />
      <Field name="external_id" label="External id (optional)" autoComplete="off" spellCheck={false} hint="Your own id for this customer, unique among your accounts." />
      <SelectField
        name="plan_id"
        label="Plan"
        options={[{ value: '', label: 'No plan' }, ...plans.map((p) => ({ value: p.id, label: `${p.name} (${p.summary})` }))]}
        hint="A plan that charges needs a card: tick the box below to send the customer a card-collector link; the plan starts once they have entered a card."
      />
      <CheckboxField name="enable_card_collector" label="Create a card-collector link for the customer" hint="The link is shown once, after the account is created." />
    </ActionForm>
  );
}

export function GrantForm({ action, denominations }: { action: FormAction; denominations: string[] }) {
  return (
    <ActionForm action={action} submitLabel="Grant units" pendingLabel="Granting…" label="Grant units" className="space-y-3">
      <Field name="denomination" label="Denomination" list="grant-denominations" defaultValue={denominations[0] ?? ''} hint="An existing balance, or a new one." autoComplete="off" />
      <datalist id="grant-denominations">
        {denominations.map((d) => (
          <option key={d} value={d} />
        ))}
      </datalist>
      <Field name="amount" label="Units to add" inputMode="decimal" autoComplete="off" />
      <Field name="reason" label="Reason (shown in the ledger)" autoComplete="off" />
    </ActionForm>
  );
}

export function ChangePlanForm({ action, plans, currentPlanId }: { action: FormAction; plans: PlanOption[]; currentPlanId: string | null }) {
  return (
    <ActionForm action={action} submitLabel="Change plan" pendingLabel="Changing…" label="Change plan" className="space-y-3" resetOnSuccess={false}>
      <SelectField
        name="plan_id"
        label="New plan"
        defaultValue={plans.find((p) => p.id !== currentPlanId)?.id ?? ''}
        options={[{ value: '', label: 'Choose a plan' }, ...plans.map((p) => ({ value: p.id, label: `${p.name} (${p.summary})${p.id === currentPlanId ? ', current' : ''}` }))]}
        hint="A plan that costs the same or more starts now, with credit for the unused time; a cheaper one waits for the next renewal."
      />
    </ActionForm>
  );
}

export function RefillForm({ action, denominations }: { action: FormAction; denominations: string[] }) {
  return (
    <ActionForm action={action} submitLabel="Set refill" pendingLabel="Saving…" label="Set refill" className="space-y-3">
      <Field name="denomination" label="Denomination" list="refill-denominations" defaultValue={denominations[0] ?? ''} autoComplete="off" />
      <datalist id="refill-denominations">
        {denominations.map((d) => (
          <option key={d} value={d} />
        ))}
      </datalist>
      <Field name="amount" label="Units per refill" inputMode="decimal" autoComplete="off" />
      <Field name="usd_charge" label="Price per refill (USD)" inputMode="decimal" defaultValue="0" hint="Charged to the card on file; 0 makes it free." autoComplete="off" />
      <Field name="threshold" label="Refill when available drops below (units)" inputMode="decimal" hint="Leave empty for no threshold refill." autoComplete="off" />
      <Field name="max_charges_per_month" label="At most this many threshold refills a month" inputMode="numeric" hint="Leave empty for no limit. Past it no refill is charged until the next month." autoComplete="off" />
      <CheckboxField name="refill_period" value="monthly" label="Refill every month" hint="The first monthly refill is made (and charged) now, then on this day of each month." />
    </ActionForm>
  );
}

export type SpendLimitRow = { denomination: string; period: string; limit: string; action: string };

/** The account's whole list of spend limits, edited as rows (two empty ones to add); saving replaces the list, and empty rows are no limits. */
export function SpendLimitsForm({ action, limits, denominations }: { action: FormAction; limits: SpendLimitRow[]; denominations: string[] }) {
  const rows = [...limits, { denomination: '', period: 'day', limit: '', action: 'reject' }, { denomination: '', period: 'day', limit: '', action: 'reject' }];
  return (
    <ActionForm action={action} submitLabel="Save spend limits" pendingLabel="Saving…" label="Spend limits" className="space-y-3" resetOnSuccess={false}>
      <datalist id="limit-denominations">
        {denominations.map((d) => (
          <option key={d} value={d} />
        ))}
      </datalist>
      {rows.map((r, i) => (
        <fieldset key={`${i}-${r.denomination}-${r.period}-${r.action}-${r.limit}`} className="grid grid-cols-1 gap-2 border-t border-slate-200 pt-2 sm:grid-cols-4">
          <legend className="sr-only">{i < limits.length ? `Limit ${i + 1}` : 'New limit'}</legend>
          <Field name={`limits[${i}].denomination`} label="Denomination" list="limit-denominations" defaultValue={r.denomination} autoComplete="off" />
          <SelectField name={`limits[${i}].period`} label="Per" defaultValue={r.period} options={[{ value: 'day', label: 'Day (UTC)' }, { value: 'week', label: 'Week (from Monday)' }, { value: 'month', label: 'Month' }]} />
          <Field name={`limits[${i}].limit`} label="Limit (units)" inputMode="decimal" defaultValue={r.limit} autoComplete="off" />
          <SelectField name={`limits[${i}].action`} label="Past it" defaultValue={r.action} options={[{ value: 'reject', label: 'Reject events' }, { value: 'notify', label: 'Notify once' }]} />
        </fieldset>
      ))}
      <p className="text-xs text-slate-700">Spend is what completed events cost in the period plus live holds. Clear a row to remove its limit.</p>
    </ActionForm>
  );
}
