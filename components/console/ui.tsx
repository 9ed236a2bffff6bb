import Link from 'next/link';

/** Page title with an optional line under it and actions on the right. */
export function PageHeader({ title, description, actions, back }: { title: React.ReactNode; description?: React.ReactNode; actions?: React.ReactNode; back?: { href: string; label: string } }) {
  return (
    <div className="mb-6">
      {back && (
        <p className="mb-2 text-sm">
          <Link href={back.href} className="text-blue-800 underline hover:text-blue-950">
            ← {back.label}
          </Link>
        </p>
      )}
      <div className="flex flex-wrap items-end justify-between gap-3">
        <div className="min-w-0">
          <h1 className="break-words text-2xl font-semibold">{title}</h1>
          {description && <div className="mt-1 text-slate-700">{description}</div>}
        </div>
        {actions && <div className="flex flex-wrap gap-2">{actions}</div>}
      </div>
    </div>
  );
}

/** A titled card; `id` makes it a landmark-like region reachable from links on the page. */
export function Section({ title, id, children, actions, description }: { title: string; id?: string; children: React.ReactNode; actions?: React.ReactNode; description?: React.ReactNode }) {
  const headingId = `${id ?? title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-heading`;
  return (
    <section aria-labelledby={headingId} id={id} className="mb-6 rounded-lg border border-slate-200 bg-white p-4 shadow-sm">
      <div className="mb-3 flex flex-wrap items-baseline justify-between gap-2">
        <h2 id={headingId} className="text-lg font-semibold">
          {title}
        </h2>
        {actions && <div className="flex flex-wrap gap-3 text-sm">{actions}</div>}
      </div>
      {description && <div className="-mt-2 mb-3 text-sm text-slate-700">{description}</div>}
      {children}
    </section>
  );
}

/**
 * A table that scrolls sideways on narrow screens. The scrolling box is focusable and named so
 * keyboard users can scroll it too.
 */
export function Table({ caption, head, children, srCaption = true }: { caption: string; head: React.ReactNode[]; children: React.ReactNode; srCaption?: boolean }) {
  return (
    <div role="region" aria-label={caption} tabIndex={0} className="overflow-x-auto rounded border border-slate-200">
      <table className="w-full border-collapse text-left text-sm">
        <caption className={srCaption ? 'sr-only' : 'p-2 text-left font-medium'}>{caption}</caption>
        <thead className="bg-slate-100 text-slate-800">
          <tr>
            {head.map((h, i) => (
              <th key={i} scope="col" className="whitespace-nowrap px-3 py-2 font-semibold">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

export function Td({ children, className = '', mono = false }: { children: React.ReactNode; className?: string; mono?: boolean }) {
  return <td className={`border-t border-slate-200 px-3 py-2 align-top ${mono ? 'font-mono text-xs' : ''} ${className}`}>{children}</td>;
}

const TONES: Record<string, string> = {
  green: 'bg-green-100 text-green-900 ring-green-700/30',
  red: 'bg-red-100 text-red-900 ring-red-700/30',
  amber: 'bg-amber-100 text-amber-950 ring-amber-700/30',
  blue: 'bg-blue-100 text-blue-900 ring-blue-700/30',
  slate: 'bg-slate-100 text-slate-800 ring-slate-600/30',
};

const STATE_TONE: Record<string, keyof typeof TONES> = {
  complete: 'green',
  succeeded: 'green',
  ACTIVE: 'green',
  active: 'green',
  pending: 'amber',
  sending: 'amber',
  PENDING_PAYMENT_METHOD: 'amber',
  cancelled: 'slate',
  NONE: 'slate',
  revoked: 'slate',
  CANCELLED: 'slate',
  rejected: 'red',
  failed: 'red',
  PAST_DUE: 'red',
};

const STATE_LABEL: Record<string, string> = {
  PENDING_PAYMENT_METHOD: 'Waiting for card',
  PAST_DUE: 'Past due',
  ACTIVE: 'Active',
  NONE: 'No plan',
  CANCELLED: 'Cancelled',
};

/** A state word in a colored pill; the word itself carries the meaning, color only helps. */
export function Badge({ value, tone }: { value: string; tone?: keyof typeof TONES }) {
  const t = tone ?? STATE_TONE[value] ?? 'slate';
  return <span className={`inline-block whitespace-nowrap rounded-full px-2 py-0.5 text-xs font-medium ring-1 ring-inset ${TONES[t]}`}>{STATE_LABEL[value] ?? value}</span>;
}

/** Keyset paging: "Newest" goes back to the start, "Older" continues after the last row. */
export function Pager({ basePath, params, nextAfter, isFirst, label = 'Pages' }: { basePath: string; params: Record<string, string | undefined>; nextAfter: string | null; isFirst: boolean; label?: string }) {
  if (!nextAfter && isFirst) return null;
  const href = (after?: string) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
    if (after) q.set('after', after);
    const s = q.toString();
    return s ? `${basePath}?${s}` : basePath;
  };
  return (
    <nav aria-label={label} className="mt-3 flex flex-wrap gap-4 text-sm">
      {!isFirst && (
        <Link href={href()} className="text-blue-800 underline hover:text-blue-950">
          ← Newest
        </Link>
      )}
      {nextAfter && (
        <Link href={href(nextAfter)} className="text-blue-800 underline hover:text-blue-950">
          Older →
        </Link>
      )}
    </nav>
  );
}

export function Empty({ children }: { children: React.ReactNode }) {
  return <p className="rounded border border-dashed border-slate-300 p-4 text-slate-700">{children}</p>;
}

/** A definition list of label/value pairs, two columns on wide screens. */
export function Facts({ items }: { items: [React.ReactNode, React.ReactNode][] }) {
  return (
    <dl className="grid grid-cols-1 gap-x-6 gap-y-2 text-sm sm:grid-cols-[max-content_1fr]">
      {items.map(([k, v], i) => (
        <div key={i} className="contents">
          <dt className="font-medium text-slate-700">{k}</dt>
          <dd className="mb-2 break-words sm:mb-0">{v}</dd>
        </div>
      ))}
    </dl>
  );
}

export const linkClass = 'text-blue-800 underline hover:text-blue-950';
export const buttonLinkClass = 'inline-block rounded bg-blue-800 px-4 py-2 font-medium text-white hover:bg-blue-900';

/** A UTC timestamp that wraps between date and time on narrow screens. */
export function Time({ value }: { value: Date | string | null | undefined }) {
  if (!value) return <>—</>;
  const d = typeof value === 'string' ? new Date(value) : value;
  const iso = d.toISOString();
  return (
    <time dateTime={iso}>
      <span className="whitespace-nowrap">{iso.slice(0, 10)}</span> <span className="whitespace-nowrap">{iso.slice(11, 16)} UTC</span>
    </time>
  );
}
