'use client';
import { DayTable } from './day-table';
import { Bar, BarChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';

/** value: what the bar's height shows (dollars for `usd`); label: the exact figure, formatted. */
export type ChartPoint = { day: string; value: number; label: string };

const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });

/**
 * One series per day as bars. Recharts draws the SVG (with its keyboard-operable tooltip layer);
 * the same numbers, exact and formatted by the server, are in a table under the chart for
 * screen readers and for anyone who wants the figures.
 */
export function DailyChart({ title, description, points, unit, color = '#1d4ed8' }: { title: string; description?: string; points: ChartPoint[]; unit: 'count' | 'usd' | 'units'; color?: string }) {
  const tick = (v: number) => (unit === 'usd' ? `$${compact.format(v)}` : compact.format(v));
  const byDay = new Map(points.map((p) => [p.day, p.label]));
  const total = points.reduce((s, p) => s + p.value, 0);
  return (
    <figure className="rounded-lg border border-slate-200 bg-white p-4 shadow-sm">
      <figcaption>
        <span className="block font-semibold">{title}</span>
        {description && <span className="block text-sm text-slate-700">{description}</span>}
      </figcaption>
      <div className="mt-3 h-48" aria-hidden={total === 0 ? true : undefined}>
        <ResponsiveContainer width="100%" height="100%" initialDimension={{ width: 320, height: 192 }}>
          <BarChart data={points} margin={{ top: 4, right: 4, bottom: 0, left: 0 }} title={title}>
            <CartesianGrid vertical={false} stroke="#e2e8f0" />
            <XAxis dataKey="day" tickFormatter={(d: string) => d.slice(5)} tick={{ fill: '#334155', fontSize: 11 }} interval="preserveStartEnd" minTickGap={16} />
            <YAxis tickFormatter={tick} tick={{ fill: '#334155', fontSize: 11 }} width={48} allowDecimals={unit !== 'count'} />
            <Tooltip
              cursor={{ fill: '#f1f5f9' }}
              formatter={(_v, _n, item) => [byDay.get((item as { payload: ChartPoint }).payload.day) ?? '', title]}
              labelFormatter={(d) => `${d} (UTC)`}
            />
            <Bar dataKey="value" fill={color} radius={[2, 2, 0, 0]} isAnimationActive={false} />
          </BarChart>
        </ResponsiveContainer>
      </div>
      {total === 0 && <p className="mt-2 text-sm text-slate-700">Nothing in the last 30 days.</p>}
      <DayTable title={title} columns={[{ key: 'value', name: 'Value' }]} rows={points.map((p) => ({ day: p.day, values: { value: p.label } }))} />
    </figure>
  );
}
