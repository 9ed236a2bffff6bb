'use client';
import { useRef, useState } from 'react';
import { ActionForm, CheckboxField, Field, SelectField, type FormAction } from './action-form';
import { RateCardEditor } from './rate-card-editor';

type Row = { key: number };

/** Rows that can be added and removed; inputs stay uncontrolled, names follow the row's position. */
function useRows(initial: number) {
  const next = useRef(initial);
  const [rows, setRows] = useState<Row[]>(() => Array.from({ length: initial }, (_, i) => ({ key: i })));
  return {
    rows,
    add: () => setRows((r) => [...r, { key: next.current++ }]),
    remove: (key: number) => setRows((r) => r.filter((x) => x.key !== key)),
  };
}

function RowBox({ legend, onRemove, children }: { legend: string; onRemove: () => void; children: React.ReactNode }) {
  return (
    <fieldset className="rounded border border-slate-300 p-3">
      <legend className="px-1 text-sm font-semibold">{legend}</legend>
      <div className="grid grid-cols-1 gap-3 sm:grid-cols-2 lg:grid-cols-4">{children}</div>
      <button type="button" onClick={onRemove} className="mt-3 rounded border border-slate-400 px-3 py-1 text-sm hover:bg-slate-100">
        Remove {legend.toLowerCase()}
      </button>
    </fieldset>
  );
}

const addClass = 'rounded border border-blue-800 px-3 py-1.5 text-sm font-medium text-blue-900 hover:bg-blue-50';

export function PlanForm({ action }: { action: FormAction }) {
  const balances = useRows(1);
  const flags = useRows(0);
  return (
    <ActionForm action={action} submitLabel="Create plan" pendingLabel="Creating…" label="New plan" resetOnSuccess={false} className="space-y-6">
      <div className="grid grid-cols-1 gap-3 sm:grid-cols-2">
        <Field name="name" label="Name" autoComplete="off" className="sm:col-span-2" />
        <Field name="charge_amount" label="Price per period (USD)" inputMode="decimal" defaultValue="0" hint="Charged to the card at the start of each period; 0 for a free plan." autoComplete="off" />
        <SelectField
          name="billing_period"
          label="Billing period"
          defaultValue="month"
          options={[
            { value: 'day', label: 'Day' },
            { value: 'week', label: 'Week' },
            { value: 'month', label: 'Month' },
            { value: 'year', label: 'Year' },
          ]}
        />
        <SelectField
          name="overage_charge_mode"
          label="Overage"
          defaultValue="none"
          options={[
            { value: 'none', label: 'Not billed (balances may go negative)' },
            { value: 'postpay', label: 'Billed at renewal (postpay)' },
          ]}
        />
        <Field name="threshold_alert_percentage" label="Threshold alert at % used" inputMode="decimal" hint="Optional: sends a threshold webhook when this share of an included balance is used." autoComplete="off" />
      </div>

      <section aria-labelledby="plan-balances" className="space-y-3">
        <h2 id="plan-balances" className="text-lg font-semibold">
          Included balances
        </h2>
        <p className="text-sm text-slate-700">Units each account gets every period. Each balance is reset to its included amount at renewal.</p>
        {balances.rows.map((r, i) => (
          <RowBox key={r.key} legend={`Balance ${i + 1}`} onRemove={() => balances.remove(r.key)}>
            <Field name={`balances[${i}].denomination`} label="Denomination" hint="A unit name, such as tokens or storage-GB." autoComplete="off" />
            <Field name={`balances[${i}].amount`} label="Included units" inputMode="decimal" autoComplete="off" />
            <Field name={`balances[${i}].overage_charge_amount`} label="Overage price per unit (USD)" inputMode="decimal" hint="Whole cents; for postpay plans." autoComplete="off" />
            <Field name={`balances[${i}].variable_unit_price`} label="Variable price per unit (USD)" inputMode="decimal" hint="Optional: lets each account choose its amount." autoComplete="off" />
          </RowBox>
        ))}
        <button type="button" onClick={balances.add} className={addClass}>
          Add a balance
        </button>
      </section>

      <RateCardEditor />

      <section aria-labelledby="plan-flags" className="space-y-3">
        <h2 id="plan-flags" className="text-lg font-semibold">
          Flags
        </h2>
        <p className="text-sm text-slate-700">Feature switches copied to each account on the plan, for your own code to read.</p>
        {flags.rows.map((r, i) => (
          <RowBox key={r.key} legend={`Flag ${i + 1}`} onRemove={() => flags.remove(r.key)}>
            <Field name={`flags[${i}].name`} label="Flag name" autoComplete="off" />
            <CheckboxField name={`flags[${i}].enabled`} label="On" className="self-end pb-2" defaultChecked />
          </RowBox>
        ))}
        <button type="button" onClick={flags.add} className={addClass}>
          Add a flag
        </button>
      </section>
    </ActionForm>
  );
}
