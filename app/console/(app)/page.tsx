import Link from 'next/link';
import { Suspense } from 'react';
import { requireUser } from '@/lib/auth';
import { getReadDb } from '@/lib/db/replica';
import { now } from '@/lib/clock';
import { amountFor, Decimal } from '@/lib/money';
import { listEvents } from '@/lib/billing/events/events';
import { accountTotals, dailyTotals, type Count } from '@/lib/console/dashboard';
import { accountNames } from '@/lib/console/queries';
import { formatCents, formatCount, formatUnits } from '@/lib/console/format';
import { DailyChart } from '@/components/console/daily-chart';
import { Empty, PageHeader, Section, linkClass } from '@/components/console/ui';
import { EventsTable } from '@/components/console/account-tables';

export const metadata = { title: 'Dashboard' };

function Stat({ label, value, detail, href }: { label: string; value: string; detail?: React.ReactNode; href?: string }) {
  return (
    <div className="rounded-lg border border-slate-200 bg-white p-4 shadow-sm">
      <dt className="text-sm font-medium text-slate-700">{href ? <Link href={href} className={linkClass}>{label}</Link> : label}</dt>
      <dd className="mt-1 text-2xl font-semibold tabular-nums">{value}</dd>
      {detail && <dd className="mt-1 text-sm text-slate-700">{detail}</dd>}
    </div>
  );
}

function countText(c: Count): string {
  if (c.estimated) return `about ${formatCount(c.value)}`;
  return `${formatCount(c.value)}${c.atLeast ? '+' : ''}`;
}

async function AccountStat({ companyId }: { companyId: string }) {
  const { total, recent } = await accountTotals({ db: await getReadDb(), companyId, now: now() });
  return (
    <Stat
      label="Accounts"
      href="/console/accounts"
      value={countText(total)}
      detail={
        <>
          {countText(recent)} new in the last 30 days
          {total.estimated && <span className="block text-xs">Estimated from table statistics.</span>}
        </>
      }
    />
  );
}

async function Activity({ companyId }: { companyId: string }) {
  const days = await dailyTotals({ db: await getReadDb(), companyId, now: now() });
  const today = days[days.length - 1];
  const sum = (f: (d: (typeof days)[number]) => number) => days.reduce((s, d) => s + f(d), 0);
  const events = sum((d) => d.events);
  const rejected = sum((d) => d.rejected);
  const revenue = sum((d) => d.chargedCents);
  const failed = sum((d) => d.failedCharges);
  const denominations = new Map<string, Decimal>();
  for (const d of days) for (const [k, v] of Object.entries(d.usage)) denominations.set(k, (denominations.get(k) ?? new Decimal(0)).plus(v));
  const top = [...denominations.entries()].sort((a, b) => b[1].cmp(a[1]) || (a[0] < b[0] ? -1 : 1));
  const shown = top.slice(0, 4);
  return (
    <>
      <dl className="contents">
        <Stat label="Events" href="/console/events" value={formatCount(events)} detail={`${formatCount(today.events)} today`} />
        <Stat label="Rejected events" href="/console/events?state=rejected" value={formatCount(rejected)} detail={`${formatCount(today.rejected)} today; refused for lack of balance`} />
        <Stat label="Revenue" value={formatCents(revenue)} detail={`${formatCents(today.chargedCents)} today; ${formatCount(failed)} failed ${failed === 1 ? 'charge' : 'charges'}`} />
      </dl>
      <div className="col-span-full mt-2 grid grid-cols-1 gap-4 lg:grid-cols-2">
        {shown.length === 0 && (
          <DailyChart title="Usage per day" description="Sum of the costs of completed events." unit="units" points={days.map((d) => ({ day: d.day, value: 0, label: '0' }))} />
        )}
        {shown.map(([denomination, total]) => (
          <DailyChart
            key={denomination}
            title={`Usage per day: ${denomination}`}
            description={`Sum of the costs of completed events; ${formatUnits(total.toFixed())} ${denomination} in 30 days.`}
            unit="units"
            points={days.map((d) => ({ day: d.day, value: Number(amountFor(d.usage, denomination) ?? 0), label: `${formatUnits(amountFor(d.usage, denomination) ?? '0')} ${denomination}` }))}
          />
        ))}
        <DailyChart
          title="Charges per day"
          description={`Succeeded card charges; ${formatCents(revenue)} in 30 days.`}
          unit="usd"
          color="#047857"
          points={days.map((d) => ({ day: d.day, value: d.chargedCents / 100, label: formatCents(d.chargedCents) }))}
        />
        <DailyChart
          title="Rejected events per day"
          description={`Gated events refused because the balance was short; ${formatCount(rejected)} in 30 days.`}
          unit="count"
          color="#b91c1c"
          points={days.map((d) => ({ day: d.day, value: d.rejected, label: formatCount(d.rejected) }))}
        />
      </div>
      {top.length > shown.length && (
        <p className="col-span-full text-sm text-slate-700">
          {top.length - shown.length} more {top.length - shown.length === 1 ? 'denomination' : 'denominations'} not charted: {top.slice(4).map(([d]) => d).join(', ')}.
        </p>
      )}
    </>
  );
}

async function RecentEvents({ companyId }: { companyId: string }) {
  const db = await getReadDb();
  const at = now();
  const page = await listEvents({ db, companyId, q: { limit: 8 }, now: at });
  const names = await accountNames({ db, companyId, ids: page.items.map((e) => e.accountId) });
  if (!page.items.length) return <Empty>No events yet. Send one with <code>POST /v1/accounts/&#123;account_id&#125;/events</code>.</Empty>;
  return (
    <EventsTable caption="Latest events" rows={page.items} at={at} names={names} />
  );
}

function Loading({ label }: { label: string }) {
  return (
    <div role="status" className="rounded-lg border border-slate-200 bg-white p-4 text-slate-700">
      {label}
    </div>
  );
}

export default async function Dashboard() {
  const user = await requireUser();
  return (
    <>
      <PageHeader title="Dashboard" description="The last 30 days, today included. Days are UTC." />
      <div className="grid grid-cols-1 gap-4 sm:grid-cols-2 lg:grid-cols-4">
        <dl className="contents">
          <Suspense fallback={<Loading label="Counting accounts…" />}>
            <AccountStat companyId={user.companyId} />
          </Suspense>
        </dl>
        <Suspense fallback={<Loading label="Adding up events and charges…" />}>
          <Activity companyId={user.companyId} />
        </Suspense>
      </div>
      <div className="mt-6">
        <Section title="Latest events" actions={<Link href="/console/events" className={linkClass}>All events</Link>}>
          <Suspense fallback={<Loading label="Loading events…" />}>
            <RecentEvents companyId={user.companyId} />
          </Suspense>
        </Section>
      </div>
    </>
  );
}
