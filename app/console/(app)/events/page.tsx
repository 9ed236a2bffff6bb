import Link from 'next/link';
import { requireUser } from '@/lib/auth';
import { getReadDb } from '@/lib/db/replica';
import { now } from '@/lib/clock';
import { eventListQuery } from '@/lib/api/schemas/events';
import { listEvents } from '@/lib/billing/events/events';
import { describeIssue } from '@/lib/api/zod-errors';

import { accountNames } from '@/lib/console/queries';
import { localToIso } from '@/lib/console/exports';
import { PageHeader, linkClass } from '@/components/console/ui';
import { ListPage } from '@/components/console/list-page';
import { EventsTable } from '@/components/console/account-tables';

export const metadata = { title: 'Events' };

type Params = { account_id?: string; type?: string; state?: string; created_gte?: string; created_lt?: string; after?: string };

const STATES = [
  { value: '', label: 'Any state' },
  { value: 'complete', label: 'Complete' },
  { value: 'pending', label: 'Pending' },
  { value: 'cancelled', label: 'Cancelled' },
  { value: 'rejected', label: 'Rejected' },
];

const inputClass = 'mt-1 block min-h-[2.625rem] w-full rounded border border-slate-500 bg-white px-3 py-2 aria-[invalid=true]:border-red-700';

export default async function EventsPage({ searchParams }: { searchParams: Promise<Params> }) {
  const user = await requireUser();
  const sp = await searchParams;
  const filters = {
    account_id: sp.account_id?.trim() || undefined,
    type: sp.type?.trim() || undefined,
    state: sp.state || undefined,
    created_gte: sp.created_gte || undefined,
    created_lt: sp.created_lt || undefined,
  };
  const parsed = eventListQuery.safeParse({
    limit: '50',
    ...(sp.after && { starting_after: sp.after }),
    ...(filters.account_id && { account_id: filters.account_id }),
    ...(filters.type && { type: filters.type }),
    ...(filters.state && { state: filters.state }),
    ...(filters.created_gte && { created_gte: localToIso(filters.created_gte) }),
    ...(filters.created_lt && { created_lt: localToIso(filters.created_lt) }),
  });
  const errors = new Map<string, string>();
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const { param, message } = describeIssue(issue);
      if (param && !errors.has(param)) errors.set(param, message.replace(`${param} `, '').replace(/^./, (c) => c.toUpperCase()));
    }
  }
  const db = await getReadDb();
  const at = now();
  const page = parsed.success ? await listEvents({ db, companyId: user.companyId, q: parsed.data, now: at }) : { items: [], hasMore: false };
  const names = await accountNames({ db, companyId: user.companyId, ids: page.items.map((e) => e.accountId) });
  const filterAccount = parsed.success && filters.account_id ? (await accountNames({ db, companyId: user.companyId, ids: [filters.account_id] })).get(filters.account_id) : undefined;
  const filtered = Object.values(filters).some(Boolean);
  // Every event the filters select, not only this page: the export reads them page by page.
  const exportQuery = new URLSearchParams(Object.entries(filters).filter((e): e is [string, string] => Boolean(e[1]))).toString();
  const exportHref = `/console/events/export${exportQuery ? `?${exportQuery}` : ''}`;

  const field = (name: keyof typeof filters, label: string, props: React.InputHTMLAttributes<HTMLInputElement> = {}, hint?: string) => {
    const error = errors.get(name);
    return (
      <div>
        <label htmlFor={`f-${name}`} className="block text-sm font-medium">
          {label}
        </label>
        <input
          id={`f-${name}`}
          name={name}
          defaultValue={filters[name]}
          aria-invalid={error ? true : undefined}
          aria-describedby={[hint ? `f-${name}-hint` : '', error ? `f-${name}-error` : ''].filter(Boolean).join(' ') || undefined}
          className={inputClass}
          {...props}
        />
        {hint && (
          <p id={`f-${name}-hint`} className="mt-1 text-xs text-slate-700">
            {hint}
          </p>
        )}
        {error && (
          <p id={`f-${name}-error`} className="mt-1 text-sm text-red-800">
            {error}
          </p>
        )}
      </div>
    );
  };

  return (
    <>
      <PageHeader title="Events" description="Billable usage reported by your backend, newest first. Times are UTC." />
      <form role="search" aria-label="Filter events" className="mb-4 rounded-lg border border-slate-200 bg-white p-4 shadow-sm">
        <div className="grid grid-cols-1 gap-3 sm:grid-cols-2 lg:grid-cols-5">
          {field('account_id', 'Account id', { placeholder: 'a_…', autoComplete: 'off', spellCheck: false })}
          {field('type', 'Type', { autoComplete: 'off' })}
          <div>
            <label htmlFor="f-state" className="block text-sm font-medium">
              State
            </label>
            <select id="f-state" name="state" defaultValue={filters.state ?? ''} aria-invalid={errors.has('state') ? true : undefined} className={inputClass}>
              {STATES.map((s) => (
                <option key={s.value} value={s.value}>
                  {s.label}
                </option>
              ))}
            </select>
            {errors.has('state') && <p className="mt-1 text-sm text-red-800">{errors.get('state')}</p>}
          </div>
          {field('created_gte', 'From (UTC)', { type: 'datetime-local' })}
          {field('created_lt', 'Before (UTC)', { type: 'datetime-local' })}
        </div>
        <div className="mt-3 flex flex-wrap items-center gap-3">
          <button className="rounded bg-blue-800 px-4 py-2 font-medium text-white hover:bg-blue-900">Apply filters</button>
          {filtered && (
            <Link href="/console/events" className={linkClass}>
              Clear filters
            </Link>
          )}
          {parsed.success && (
            <a href={exportHref} download className={linkClass}>
              Download CSV{filtered ? ' of the filtered events' : ''}
            </a>
          )}
        </div>
      </form>
      {filters.account_id && parsed.success && (
        <p className="mb-3 text-sm">
          {filterAccount ? (
            <>
              Events of{' '}
              <Link href={`/console/accounts/${filters.account_id}`} className={linkClass}>
                {filterAccount}
              </Link>
              .
            </>
          ) : (
            <>No account of yours has the id {filters.account_id}.</>
          )}
        </p>
      )}
      <ListPage
        page={page}
        after={sp.after}
        basePath="/console/events"
        params={filters}
        pagerLabel="Event pages"
        empty={filtered ? 'No events match these filters.' : sp.after ? 'No older events.' : 'No events yet.'}
        instead={
          parsed.success ? undefined : (
            <p role="alert" className="rounded border border-red-300 bg-red-50 p-3 text-sm text-red-900">
              Please correct the marked filters.
            </p>
          )
        }
      >
        {(items) => <EventsTable caption={filtered ? 'Events matching the filters' : 'Events'} rows={items} at={at} names={names} detailed />}
      </ListPage>
    </>
  );
}
