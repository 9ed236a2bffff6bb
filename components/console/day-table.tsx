/**
 * "Show the numbers" under a chart: the exact figures per day, newest first, in a table that
 * screen readers and anyone who wants the figures can read. `rows` oldest first, as the chart has them.
 */
export function DayTable({ title, columns, rows }: { title: string; columns: readonly { key: string; name: string }[]; rows: { day: string; values: Record<string, string> }[] }) {
  return (
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
              {columns.map((c) => (
                <th key={c.key} scope="col" className="px-3 py-1 text-right">
                  {c.name}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {[...rows].reverse().map((r) => (
              <tr key={r.day} className="border-t border-slate-200">
                <td className="px-3 py-1">{r.day}</td>
                {columns.map((c) => (
                  <td key={c.key} className="px-3 py-1 text-right tabular-nums">
                    {r.values[c.key]}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </details>
  );
}
