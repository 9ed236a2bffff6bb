'use client';
import { ActionForm, Field, type FormAction } from './action-form';

export function PortalTopupsForm({ action, rows, max }: { action: FormAction; rows: { denomination: string; units: string; price: string }[]; max: number }) {
  // The packages offered, then empty rows to add more (up to the limit).
  const shown = [...rows, ...Array.from({ length: Math.max(0, Math.min(max, rows.length + 3) - rows.length) }, () => ({ denomination: '', units: '', price: '' }))];
  return (
    <ActionForm action={action} submitLabel="Save packages" pendingLabel="Saving…" label="Top-up packages" className="space-y-3" resetOnSuccess={false}>
      {shown.map((r, i) => (
        <fieldset key={i} className="grid grid-cols-1 gap-2 sm:grid-cols-3">
          <legend className="sr-only">Package {i + 1}</legend>
          <Field name={`denomination_${i}`} label={`Package ${i + 1}: denomination`} defaultValue={r.denomination} autoComplete="off" spellCheck={false} />
          <Field name={`units_${i}`} label="Units" defaultValue={r.units} inputMode="decimal" autoComplete="off" />
          <Field name={`price_${i}`} label="Price in dollars" defaultValue={r.price} inputMode="decimal" autoComplete="off" />
        </fieldset>
      ))}
    </ActionForm>
  );
}

export function UsagePropertiesForm({ action, names, max }: { action: FormAction; names: string[]; max: number }) {
  const shown = [...names, ...Array.from({ length: max - names.length }, () => '')];
  return (
    <ActionForm action={action} submitLabel="Save properties" pendingLabel="Saving…" label="Usage properties" className="space-y-3" resetOnSuccess={false}>
      <div className="grid grid-cols-1 gap-2 sm:grid-cols-3">
        {shown.map((name, i) => (
          <Field key={i} name={`usage_properties[${i}]`} label={`Property ${i + 1}`} defaultValue={name} autoComplete="off" spellCheck={false} />
        ))}
      </div>
    </ActionForm>
  );
}
