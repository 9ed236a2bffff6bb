'use client';
import { useId, useRef, useState } from 'react';
import { Field, SelectField } from './action-form';
import { formatUnits } from '@/lib/console/format';
import { PRICE_KINDS, VALUE_KINDS, fieldLabel, previewPrice, type ComponentRow, type FilterRow, type RuleRow, type TierRow } from '@/lib/console/rate-card-form';

/** A row with the id React keeps it by (a filter's `key` is its property's name). */
type Keyed<T> = T & { id: number };
type EditTier = Keyed<TierRow>;
type EditComponent = Keyed<Omit<ComponentRow, 'tiers'> & { tiers: EditTier[] }>;
type EditFilter = Keyed<FilterRow>;
type EditRule = Keyed<Omit<RuleRow, 'filters' | 'components'> & { filters: EditFilter[]; components: EditComponent[] }>;

const addClass = 'rounded border border-blue-800 px-3 py-1.5 text-sm font-medium text-blue-900 hover:bg-blue-50';
const removeClass = 'rounded border border-slate-400 px-3 py-1 text-sm hover:bg-slate-100';
const smallInput = 'mt-1 block min-h-[2.625rem] w-full rounded border border-slate-500 bg-white px-3 py-2';

/**
 * The plan form's billing rules: each rule's event type, its filters on the event's properties
 * and its components priced by quantity (per unit, per package, graduated or volume tiers). The
 * fields are named by the API's paths, so the server's errors land on them; below, a sample
 * event priced as the rate card stands, by the rate card the service prices events with.
 */
export function RateCardEditor() {
  const next = useRef(1);
  const key = () => next.current++;
  const [rules, setRules] = useState<EditRule[]>(() => [{ id: 0, type: '', amount: '', denomination: '', filters: [], components: [] }]);
  const edit = (fn: (draft: EditRule[]) => void) =>
    setRules((r) => {
      const d = structuredClone(r);
      fn(d);
      return d;
    });
  const newTier = (): EditTier => ({ id: key(), up_to: '', unit_amount: '', flat_amount: '' });

  return (
    <>
      <section aria-labelledby="plan-rules" className="space-y-3">
        <h2 id="plan-rules" className="text-lg font-semibold">
          Billing rules
        </h2>
        <p className="text-sm text-slate-700">
          What an event costs. The first rule of the event&apos;s type whose filters all match its properties prices it; events no rule prices are recorded but not billed. A rule takes its units per event plus the price of each
          component, from the quantities the event carries (a quantity it does not carry is 0).
        </p>
        {rules.map((r, i) => {
          const at = `billing_rules[${i}]`;
          return (
            <fieldset key={r.id} className="space-y-3 rounded border border-slate-300 p-3">
              <legend className="px-1 text-sm font-semibold">Rule {i + 1}</legend>
              <div className="grid grid-cols-1 gap-3 sm:grid-cols-3">
                <Field name={`${at}.type`} label="Event type" hint="The type your backend sends, such as llm.call." autoComplete="off" value={r.type} onChange={(e) => edit((d) => void (d[i].type = e.target.value))} />
                <Field
                  name={`${at}.amount`}
                  label="Units per event"
                  inputMode="decimal"
                  hint={r.components.length ? 'Added to the components; empty for 0.' : 'The price of one event.'}
                  autoComplete="off"
                  value={r.amount}
                  onChange={(e) => edit((d) => void (d[i].amount = e.target.value))}
                />
                <Field name={`${at}.denomination`} label="Taken from balance" hint="A denomination, such as credits." autoComplete="off" value={r.denomination} onChange={(e) => edit((d) => void (d[i].denomination = e.target.value))} />
              </div>

              <div className="space-y-2">
                <h3 className="text-sm font-semibold">Filters</h3>
                {r.filters.length === 0 && <p className="text-sm text-slate-700">None: the rule prices every event of its type (that an earlier rule did not).</p>}
                {r.filters.map((f, k) => (
                  <div key={f.id} role="group" aria-label={`Filter ${k + 1}`} className="grid grid-cols-1 items-start gap-3 rounded bg-slate-50 p-2 sm:grid-cols-[1fr_10rem_1fr_auto]">
                    <Field name={`${at}.filters[${k}].key`} label="Property" autoComplete="off" value={f.key} onChange={(e) => edit((d) => void (d[i].filters[k].key = e.target.value))} />
                    <SelectField name={`${at}.filters[${k}].kind`} label="Value is" options={VALUE_KINDS} value={f.kind} onChange={(e) => edit((d) => void (d[i].filters[k].kind = e.target.value))} />
                    <Field name={`${at}.filters[${k}].value`} label="Equals" autoComplete="off" value={f.value} onChange={(e) => edit((d) => void (d[i].filters[k].value = e.target.value))} />
                    <button type="button" className={`${removeClass} justify-self-start sm:mt-7`} onClick={() => edit((d) => void d[i].filters.splice(k, 1))}>
                      Remove filter {k + 1}
                    </button>
                  </div>
                ))}
                <button type="button" className={addClass} onClick={() => edit((d) => void d[i].filters.push({ id: key(), key: '', value: '', kind: 'text' }))}>
                  Add a filter to rule {i + 1}
                </button>
              </div>

              <div className="space-y-2">
                <h3 className="text-sm font-semibold">Components</h3>
                {r.components.length === 0 && <p className="text-sm text-slate-700">None: the rule charges its units per event only.</p>}
                {r.components.map((c, j) => {
                  const cat = `${at}.components[${j}]`;
                  const kind = c.price || 'unit';
                  return (
                    <fieldset key={c.id} className="space-y-3 rounded border border-slate-200 p-3">
                      <legend className="px-1 text-sm font-medium">Component {j + 1}</legend>
                      <div className="grid grid-cols-1 gap-3 sm:grid-cols-3">
                        <Field name={`${cat}.quantity`} label="Quantity" hint="A quantity the event carries, such as input_tokens." autoComplete="off" value={c.quantity} onChange={(e) => edit((d) => void (d[i].components[j].quantity = e.target.value))} />
                        <SelectField
                          name={`${cat}.price`}
                          label="Priced"
                          options={PRICE_KINDS}
                          value={kind}
                          onChange={(e) =>
                            edit((d) => {
                              const comp = d[i].components[j];
                              comp.price = e.target.value;
                              if ((comp.price === 'graduated' || comp.price === 'volume') && comp.tiers.length === 0) comp.tiers.push(newTier());
                            })
                          }
                        />
                        {kind === 'unit' && (
                          <Field name={`${cat}.unit_amount`} label="Price per unit" inputMode="decimal" autoComplete="off" value={c.unit_amount ?? ''} onChange={(e) => edit((d) => void (d[i].components[j].unit_amount = e.target.value))} />
                        )}
                      </div>
                      {kind === 'package' && (
                        <div className="grid grid-cols-1 gap-3 sm:grid-cols-2">
                          <Field
                            name={`${cat}.package.size`}
                            label="Package size"
                            inputMode="decimal"
                            hint="Units per package; a package begun is charged whole."
                            autoComplete="off"
                            value={c.package?.size ?? ''}
                            onChange={(e) => edit((d) => void (d[i].components[j].package = { ...d[i].components[j].package, size: e.target.value }))}
                          />
                          <Field
                            name={`${cat}.package.amount`}
                            label="Price per package"
                            inputMode="decimal"
                            autoComplete="off"
                            value={c.package?.amount ?? ''}
                            onChange={(e) => edit((d) => void (d[i].components[j].package = { ...d[i].components[j].package, amount: e.target.value }))}
                          />
                        </div>
                      )}
                      {(kind === 'graduated' || kind === 'volume') && (
                        <div className="space-y-2">
                          <p className="text-sm text-slate-700">
                            {kind === 'graduated'
                              ? 'Each unit is priced at the tier it falls in, counting what the account used of this quantity since its plan period began. A flat fee is charged once, when the count enters its tier.'
                              : "The event's whole quantity is priced at the tier it reaches, plus that tier's flat fee."}{' '}
                            Tiers go in ascending order; leave &quot;Up to&quot; empty on the last one.
                          </p>
                          {c.tiers.map((t, n) => (
                            <div key={t.id} role="group" aria-label={`Tier ${n + 1}`} className="grid grid-cols-1 items-start gap-3 rounded bg-slate-50 p-2 sm:grid-cols-[1fr_1fr_1fr_auto]">
                              <Field
                                name={`${cat}.tiers[${n}].up_to`}
                                label={`Tier ${n + 1}: up to`}
                                inputMode="decimal"
                                placeholder={n === c.tiers.length - 1 ? 'No limit' : undefined}
                                autoComplete="off"
                                value={t.up_to}
                                onChange={(e) => edit((d) => void (d[i].components[j].tiers[n].up_to = e.target.value))}
                              />
                              <Field name={`${cat}.tiers[${n}].unit_amount`} label="Price per unit" inputMode="decimal" autoComplete="off" value={t.unit_amount} onChange={(e) => edit((d) => void (d[i].components[j].tiers[n].unit_amount = e.target.value))} />
                              <Field name={`${cat}.tiers[${n}].flat_amount`} label="Flat fee" inputMode="decimal" placeholder="0" autoComplete="off" value={t.flat_amount} onChange={(e) => edit((d) => void (d[i].components[j].tiers[n].flat_amount = e.target.value))} />
                              <button type="button" className={`${removeClass} justify-self-start sm:mt-7`} onClick={() => edit((d) => void d[i].components[j].tiers.splice(n, 1))}>
                                Remove tier {n + 1}
                              </button>
                            </div>
                          ))}
                          <button type="button" className={addClass} onClick={() => edit((d) => void d[i].components[j].tiers.push(newTier()))}>
                            Add a tier
                          </button>
                        </div>
                      )}
                      <button type="button" className={removeClass} onClick={() => edit((d) => void d[i].components.splice(j, 1))}>
                        Remove component {j + 1}
                      </button>
                    </fieldset>
                  );
                })}
                <button type="button" className={addClass} onClick={() => edit((d) => void d[i].components.push({ id: key(), quantity: '', price: 'unit', unit_amount: '', tiers: [] }))}>
                  Add a component to rule {i + 1}
                </button>
              </div>
              <button type="button" className={removeClass} onClick={() => edit((d) => void d.splice(i, 1))}>
                Remove rule {i + 1}
              </button>
            </fieldset>
          );
        })}
        <button type="button" className={addClass} onClick={() => edit((d) => void d.push({ id: key(), type: '', amount: '', denomination: '', filters: [], components: [] }))}>
          Add a billing rule
        </button>
      </section>
      <PricePreview rules={rules} />
    </>
  );
}

/** A sample event, priced as the rules stand: which rule prices it, each component's price and the total. */
function PricePreview({ rules }: { rules: EditRule[] }) {
  const id = useId();
  const types = [...new Set(rules.map((r) => (r.type ?? '').trim()).filter(Boolean))];
  const quantityNames = [...new Set(rules.flatMap((r) => r.components.map((c) => (c.quantity ?? '').trim())).filter(Boolean))];
  const propertyKeys = [...new Map(rules.flatMap((r) => r.filters.map((f) => [(f.key ?? '').trim(), f.kind || 'text'] as const)).filter(([k]) => k)).entries()];
  const [chosenType, setType] = useState('');
  const [quantities, setQuantities] = useState<Record<string, string>>({});
  const [properties, setProperties] = useState<Record<string, { value: string; kind?: string }>>({});
  const type = types.includes(chosenType) ? chosenType : (types[0] ?? '');
  const preview = previewPrice(rules, {
        type,
        quantities: quantityNames.map((name) => ({ name, value: quantities[name] ?? '' })).filter((q) => q.value.trim() !== ''),
        properties: propertyKeys.map(([k, kind]) => ({ key: k, value: properties[k]?.value ?? '', kind: properties[k]?.kind ?? kind })).filter((p) => p.value.trim() !== ''),
  });

  return (
    <section aria-labelledby={`${id}-h`} className="space-y-3 rounded border border-blue-200 bg-blue-50/40 p-3">
      <h2 id={`${id}-h`} className="text-lg font-semibold">
        Price preview
      </h2>
      <p className="text-sm text-slate-700">
        A sample event, priced by these rules as the service would price it. Graduated tiers are priced from zero usage, as for an account&apos;s first event of the period; later events of the period pay the tiers their
        account has reached.
      </p>
      {types.length === 0 ? (
        <p className="text-sm text-slate-700">Give a rule an event type to preview its price.</p>
      ) : (
        <div className="grid grid-cols-1 gap-3 sm:grid-cols-3">
          <div>
            <label htmlFor={`${id}-type`} className="block text-sm font-medium">
              Type of the sample event
            </label>
            <select id={`${id}-type`} className={smallInput} value={type} onChange={(e) => setType(e.target.value)}>
              {types.map((t) => (
                <option key={t}>{t}</option>
              ))}
            </select>
          </div>
          {quantityNames.map((name, n) => (
            <div key={`q-${name}`}>
              <label htmlFor={`${id}-q${n}`} className="block text-sm font-medium">
                Sample quantity {name}
              </label>
              <input id={`${id}-q${n}`} inputMode="decimal" autoComplete="off" className={smallInput} placeholder="0" value={quantities[name] ?? ''} onChange={(e) => setQuantities((q) => ({ ...q, [name]: e.target.value }))} />
            </div>
          ))}
          {propertyKeys.map(([k, kind], n) => (
            <div key={`p-${k}`}>
              <label htmlFor={`${id}-p${n}`} className="block text-sm font-medium">
                Sample property {k}
                {kind !== 'text' && <span className="font-normal text-slate-700"> ({kind === 'number' ? 'a number' : 'true or false'})</span>}
              </label>
              <input id={`${id}-p${n}`} autoComplete="off" className={smallInput} value={properties[k]?.value ?? ''} onChange={(e) => setProperties((p) => ({ ...p, [k]: { value: e.target.value, kind } }))} />
            </div>
          ))}
        </div>
      )}
      <div aria-live="polite" role="status" aria-label="Preview result" className="text-sm">
        {types.length === 0 ? null : preview.status === 'invalid' ? (
          <div className="text-red-900">
            <p className="font-medium">No price yet: fix these first.</p>
            <ul className="list-disc pl-5">
              {preview.errors.slice(0, 6).map((e, n) => (
                <li key={n}>{fieldLabel(e)}</li>
              ))}
            </ul>
          </div>
        ) : preview.status === 'unpriced' ? (
          <p>No rule prices this {type} event: it would be recorded and not billed.</p>
        ) : (
          <div className="space-y-2">
            <p>
              <span className="font-medium">Rule {preview.rule + 1}</span> prices this event.
            </p>
            <table className="w-full max-w-xl text-left">
              <caption className="sr-only">Sample event price</caption>
              <thead>
                <tr className="border-b border-slate-300">
                  <th scope="col" className="py-1 pr-3 font-medium">
                    Part
                  </th>
                  <th scope="col" className="py-1 pr-3 font-medium">
                    Quantity
                  </th>
                  <th scope="col" className="py-1 font-medium">
                    Price
                  </th>
                </tr>
              </thead>
              <tbody>
                <tr>
                  <td className="py-1 pr-3">Per event</td>
                  <td className="py-1 pr-3">—</td>
                  <td className="py-1 tabular-nums">{formatUnits(preview.baseAmount)}</td>
                </tr>
                {preview.price.components.map((c, j) => (
                  <tr key={j}>
                    <td className="py-1 pr-3">
                      Component {j + 1}: {preview.quantityNames[j]}
                    </td>
                    <td className="py-1 pr-3 tabular-nums">{formatUnits(c.quantity)}</td>
                    <td className="py-1 tabular-nums">{formatUnits(c.amount)}</td>
                  </tr>
                ))}
                <tr className="border-t border-slate-300 font-semibold">
                  <td className="py-1 pr-3" colSpan={2}>
                    Total
                  </td>
                  <td className="py-1 tabular-nums">
                    {formatUnits(preview.price.amount)} {preview.price.denomination}
                  </td>
                </tr>
              </tbody>
            </table>
          </div>
        )}
      </div>
    </section>
  );
}
