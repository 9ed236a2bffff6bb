'use client';
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';

/** One day's units as numbers for the bars, and the same exact figures formatted by the server. */
export type CreditPoint = { day: string; granted: number; spent: number; expired: number; labels: { granted: string; spent: string; expired: string } };

const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });
const SERIES = [
  { key: 'granted', name: 'Granted', color: '#1d4ed8' },
  { key: 'spent', name: 'Spent', color: '#047857' },
  { key: 'expired', name: 'Expired', color: '#b45309' },
] as const;

/**
 * Granted, spent and expired units per day as grouped bars; the exact numbers are in a table
 * under the chart, for screen readers and for anyone who wants the figures.
 */
export function CreditsChart({ title, description, points }: { title: string; description?: string; points: CreditPoint[] }) {
  const byDay = new Map(points.map((p) => [p.day, p.labels]));
  return (
    <figure className="rounded-lg border border-slate-200 bg-white p-4 shadow-sm">
      <figcaption>
        <span className="block font-semibold">{title}</span>
        {description && <span className="block text-sm text-slate-700">{description}</span>}
      </figcaption>
      <div className="mt-3 h-56">
        <ResponsiveContainer width="100%" height="100%" initialDimension={{ width: 320, height: 224 }}>
          <BarChart data={points} margin={{ top: 4, right: 4, bottom: 0, left: 0 }} title={title}>
            <CartesianGrid vertical={false} stroke="#e2e8f0" />
            <XAxis dataKey="day" tickFormatter={(d: string) => d.slice(5)} tick={{ fill: '#334155', fontSize: 11 }} interval="preserveStartEnd" minTickGap={16} />
            <YAxis tickFormatter={(v: number) => compact.format(v)} tick={{ fill: '#334155', fontSize: 11 }} width={48} />
            <Tooltip
              cursor={{ fill: '#f1f5f9' }}
              formatter={(_v, name, item) => {
                const s = SERIES.find((x) => x.name === name);
                return [s ? (byDay.get((item as { payload: CreditPoint }).payload.day)?.[s.key] ?? '') : '', name];
              }}
              labelFormatter={(d) => `${d} (UTC)`}
            />
            <Legend wrapperStyle={{ fontSize: 12 }} />
            {SERIES.map((s) => (
              <Bar key={s.key} dataKey={s.key} name={s.name} fill={s.color} radius={[2, 2, 0, 0]} isAnimationActive={false} />
            ))}
          </BarChart>
        </ResponsiveContainer>
      </div>
      <details className="mt-2 text-sm">
        <summary className="cursor-pointer text-blue-800 underline">Show the numbers</summary>
        <div role="region" aria-label={`${title}, per day`} tabIndex={0} className="mt-2 max-h-64 overflow-auto rounded border border-slate-200">
          <table className="w-full text-left">
            <caption className="sr-only">{title}, per day (UTC)</caption>
            <thead className="bg-slate-100">
              <tr>
                <th scope="col" className="px-3 py-1">
                  Day (UTC)
                </th>
                {SERIES.map((s) => (
                  <th key={s.key} scope="col" className="px-3 py-1 text-right">
                    {s.name}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {[...points].reverse().map((p) => (
                <tr key={p.day} className="border-t border-slate-200">
                  <td className="px-3 py-1">{p.day}</td>
                  {SERIES.map((s) => (
                    <td key={s.key} className="px-3 py-1 text-right tabular-nums">
                      {p.labels[s.key]}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
