'use client';
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';

import type { UsageDay } from '@/lib/console/usage';

const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });
const COLORS = ['#1d4ed8', '#047857', '#b45309', '#7c3aed', '#be123c', '#0e7490', '#4d7c0f', '#a21caf'];

/**
 * Completed events per UTC day, stacked by type; the exact events and costs per day and type are
 * in a table under the chart, for screen readers and for anyone who wants the figures.
 */
export function UsageChart({ title, description, days, types }: { title: string; description?: string; days: UsageDay[]; types: string[] }) {
  const data = days.map((d) => ({ day: d.day, ...d.counts }));
  const withRows = days.filter((d) => d.rows.length);
  return (
    <figure className="rounded-lg border border-slate-200 bg-white p-4 shadow-sm">
      <figcaption>
        <span className="block font-semibold">{title}</span>
        {description && <span className="block text-sm text-slate-700">{description}</span>}
      </figcaption>
      {withRows.length === 0 ? (
        <p className="mt-3 text-slate-700">No usage in these days.</p>
      ) : (
        <div className="mt-3 h-56">
          <ResponsiveContainer width="100%" height="100%" initialDimension={{ width: 320, height: 224 }}>
            <BarChart data={data} margin={{ top: 4, right: 4, bottom: 0, left: 0 }} title={title}>
              <CartesianGrid vertical={false} stroke="#e2e8f0" />
              <XAxis dataKey="day" tickFormatter={(d: string) => d.slice(5)} tick={{ fill: '#334155', fontSize: 11 }} interval="preserveStartEnd" minTickGap={16} />
              <YAxis tickFormatter={(v: number) => compact.format(v)} tick={{ fill: '#334155', fontSize: 11 }} width={48} allowDecimals={false} />
              <Tooltip cursor={{ fill: '#f1f5f9' }} labelFormatter={(d) => `${d} (UTC)`} />
              <Legend wrapperStyle={{ fontSize: 12 }} />
              {types.map((t, i) => (
                <Bar key={t} dataKey={t} name={t} stackId="usage" fill={COLORS[i % COLORS.length]} isAnimationActive={false} />
              ))}
            </BarChart>
          </ResponsiveContainer>
        </div>
      )}
      {withRows.length > 0 && (
        <details className="mt-2 text-sm">
          <summary className="cursor-pointer text-blue-800 underline">Show the numbers</summary>
          <div role="region" aria-label={`${title}, per day and type`} tabIndex={0} className="mt-2 max-h-64 overflow-auto rounded border border-slate-200">
            <table className="w-full text-left">
              <caption className="sr-only">{title}, per day (UTC) and type</caption>
              <thead className="bg-slate-100">
                <tr>
                  <th scope="col" className="px-3 py-1">
                    Day (UTC)
                  </th>
                  <th scope="col" className="px-3 py-1">
                    Type
                  </th>
                  <th scope="col" className="px-3 py-1 text-right">
                    Events
                  </th>
                  <th scope="col" className="px-3 py-1 text-right">
                    Cost
                  </th>
                </tr>
              </thead>
              <tbody>
                {withRows.flatMap((d) =>
                  d.rows.map((r) => (
                    <tr key={`${d.day}-${r.type}`} className="border-t border-slate-200">
                      <td className="px-3 py-1 tabular-nums">{d.day}</td>
                      <td className="px-3 py-1 break-all">{r.type}</td>
                      <td className="px-3 py-1 text-right tabular-nums">{r.events}</td>
                      <td className="px-3 py-1 text-right tabular-nums">{r.cost}</td>
                    </tr>
                  )),
                )}
              </tbody>
            </table>
          </div>
        </details>
      )}
    </figure>
  );
}
