import type { Metadata } from 'next';
import { getDb } from '@/lib/db/client';
import { setting } from '@/lib/env';
import { now as clockNow } from '@/lib/clock';
import { viewPortal, PORTAL_CHARGES, type PortalView } from '@/lib/billing/accounts/portal';
import { formatCents, formatUnits } from '@/lib/console/format';
import { PortalCardForm } from '@/components/collector-form';
import { PortalTopups, RefillSwitch } from '@/components/portal-actions';
import { UsageChart } from '@/components/usage-chart';
import { accountUsageByDay, USAGE_CHART_DAYS } from '@/lib/console/usage';

// The token is in the path: no Referer may carry it to another site.
export const metadata: Metadata = { title: 'Your account', robots: { index: false }, referrer: 'no-referrer' };
export const dynamic = 'force-dynamic';

const PROBLEMS = {
  unknown: () => 'This link is not valid. Ask the company that sent it for a new one.',
  expired: (company?: string) => `This link has expired. Ask ${company ?? 'the company that sent it'} for a new link.`,
  spent: (company?: string) => `This link can no longer be used: too many card attempts through it failed. Ask ${company ?? 'the company that sent it'} for a new link.`,
  revoked: (company?: string) => `This link was revoked by ${company ?? 'the company that sent it'}. Ask them for a new link.`,
};

const PLAN_STATUS: Record<string, { text: string; className: string }> = {
  ACTIVE: { text: 'Active', className: 'bg-green-100 text-green-900' },
  PAST_DUE: { text: 'Payment overdue', className: 'bg-red-100 text-red-900' },
  PENDING_PAYMENT_METHOD: { text: 'Waiting for a card', className: 'bg-amber-100 text-amber-900' },
  CANCELLED: { text: 'Cancelled', className: 'bg-slate-200 text-slate-900' },
};

const CHARGE_STATUS: Record<string, { text: string; className: string }> = {
  succeeded: { text: 'Paid', className: 'bg-green-100 text-green-900' },
  failed: { text: 'Failed', className: 'bg-red-100 text-red-900' },
  pending: { text: 'Processing', className: 'bg-amber-100 text-amber-900' },
};

/** Dates in words and in UTC, the service's zone: "November 24, 2026". */
function day(d: Date): string {
  return d.toLocaleDateString('en-US', { year: 'numeric', month: 'long', day: 'numeric', timeZone: 'UTC' });
}

function Badge({ value, table }: { value: string; table: Record<string, { text: string; className: string }> }) {
  const s = table[value] ?? { text: value, className: 'bg-slate-200 text-slate-900' };
  return <span className={`inline-block rounded px-2 py-0.5 text-sm font-medium ${s.className}`}>{s.text}</span>;
}

function Card({ title, id, children }: { title: string; id: string; children: React.ReactNode }) {
  return (
    <section aria-labelledby={id} className="rounded-lg border border-slate-200 bg-white p-4 shadow-sm sm:p-6">
      <h2 id={id} className="text-lg font-semibold">
        {title}
      </h2>
      {children}
    </section>
  );
}

function Balances({ view }: { view: PortalView }) {
  if (!view.balances.length) return <p className="mt-2 text-slate-700">No balances yet.</p>;
  return (
    <ul className="mt-3 grid grid-cols-1 gap-3 sm:grid-cols-2">
      {view.balances.map((b) => (
        <li key={b.denomination} className="rounded border border-slate-200 p-3" aria-label={`${b.denomination} balance`}>
          <p className="font-medium">{b.denomination}</p>
          <dl className="mt-1 grid grid-cols-[auto_1fr] gap-x-4 text-slate-800">
            <dt>Available</dt>
            <dd className="text-right text-lg font-semibold tabular-nums">{formatUnits(b.available)}</dd>
            <dt>Balance</dt>
            <dd className="text-right tabular-nums">{formatUnits(b.amount)}</dd>
            <dt>Pending</dt>
            <dd className="text-right tabular-nums">{formatUnits(b.pending)}</dd>
          </dl>
        </li>
      ))}
    </ul>
  );
}

function Grants({ view }: { view: PortalView }) {
  if (!view.grants.length) return <p className="mt-2 text-slate-700">No credit to use right now.</p>;
  return (
    <ul className="mt-3 divide-y divide-slate-200" aria-label="Credit grants, soonest expiry first">
      {view.grants.map((g) => (
        <li key={g.id} className="flex flex-wrap items-baseline justify-between gap-x-4 gap-y-1 py-3">
          <div className="min-w-0">
            <p className="font-medium">
              {formatUnits(g.remaining)} {g.denomination}
            </p>
            <p className="text-sm text-slate-700">{g.category === 'paid' ? 'Purchased' : 'Promotional'}</p>
          </div>
          <p className={g.expiresAt ? 'font-medium text-amber-900' : 'text-slate-700'}>{g.expiresAt ? `Expires ${day(g.expiresAt)}, ${g.expiresAt.toISOString().slice(11, 16)} UTC` : 'Never expires'}</p>
        </li>
      ))}
    </ul>
  );
}

function Plan({ view }: { view: PortalView }) {
  const plan = view.plan;
  if (!plan) return <p className="mt-2 text-slate-700">No plan.</p>;
  return (
    <>
      <dl className="mt-3 grid grid-cols-[auto_1fr] gap-x-4 gap-y-1 text-slate-800">
        <dt>Plan</dt>
        <dd className="font-medium">{plan.name}</dd>
        <dt>Price</dt>
        <dd>{plan.charge > 0 ? `${formatCents(plan.charge)} a ${plan.period}` : 'Free'}</dd>
        <dt>Status</dt>
        <dd>
          <Badge value={plan.status} table={PLAN_STATUS} />
        </dd>
        {plan.nextRenewal && (
          <>
            <dt>{plan.status === 'PAST_DUE' ? 'Renewal due' : 'Next renewal'}</dt>
            <dd>{day(plan.nextRenewal)}</dd>
          </>
        )}
        {plan.scheduledName && (
          <>
            <dt>Changes to</dt>
            <dd>{plan.scheduledName} at the next renewal</dd>
          </>
        )}
      </dl>
      {plan.status === 'PAST_DUE' && (
        <p className="mt-3 rounded bg-red-50 p-3 text-red-900">The last renewal payment did not go through. Save a new card below and it is tried again at once.</p>
      )}
      {plan.status === 'PENDING_PAYMENT_METHOD' && <p className="mt-3 rounded bg-amber-50 p-3 text-amber-900">The plan starts once you save a card below.</p>}
    </>
  );
}

function Charges({ view, token }: { view: PortalView; token: string }) {
  if (!view.charges.length) return <p className="mt-2 text-slate-700">No charges yet.</p>;
  return (
    <ul className="mt-3 divide-y divide-slate-200" aria-label="Charges, newest first">
      {view.charges.map((c) => (
        <li key={c.id} className="flex flex-wrap items-baseline justify-between gap-x-4 gap-y-1 py-3">
          <div className="min-w-0">
            <p className="font-medium break-words">{c.description}</p>
            <p className="text-sm text-slate-700">{day(c.createdAt)}</p>
            {c.status === 'failed' && c.failureMessage && <p className="text-sm text-red-800">{c.failureMessage}</p>}
          </div>
          <div className="flex items-center gap-2">
            <span className="font-semibold tabular-nums">{formatCents(c.amount)}</span>
            <Badge value={c.status} table={CHARGE_STATUS} />
            {c.status === 'succeeded' && (
              <a href={`/portal/${token}/receipts/${c.id}`} className="text-sm text-blue-800 underline" aria-label={`Receipt for ${c.description}`}>
                Receipt
              </a>
            )}
          </div>
        </li>
      ))}
    </ul>
  );
}

export default async function PortalPage({ params }: { params: Promise<{ token: string }> }) {
  const { token } = await params;
  const result = await viewPortal({ db: await getDb(), token });
  const stripeApi = setting('STRIPE_API_URL');
  const local = stripeApi && /^http:\/\/(127\.0\.0\.1|localhost)/.test(stripeApi) ? stripeApi : null;
  if ('problem' in result) {
    return (
      <main className="mx-auto w-full max-w-md px-4 py-10">
        <div className="rounded-lg border border-slate-200 bg-white p-6 shadow-sm">
          <h1 className="text-xl font-semibold">Your account</h1>
          <p className="mt-3 text-slate-700" role="status">
            {PROBLEMS[result.problem](result.companyName)}
          </p>
        </div>
      </main>
    );
  }
  const { view } = result;
  const usage = await accountUsageByDay({ db: await getDb(), companyId: view.ids.companyId, accountId: view.ids.accountId, now: clockNow() });
  return (
    <main className="mx-auto w-full max-w-2xl space-y-4 px-4 py-6 sm:py-10">
      <header>
        <p className="text-sm font-medium text-slate-700">{view.companyName}</p>
        <h1 className="mt-1 text-2xl font-semibold break-words">{view.account.name}</h1>
        <p className="text-slate-700 break-all">{view.account.email}</p>
      </header>
      <Card title="Balances" id="balances">
        <p className="mt-1 text-sm text-slate-700">Pending is held by work still under way; available is what you can use now.</p>
        <Balances view={view} />
      </Card>
      <Card title="Credit" id="grants">
        <p className="mt-1 text-sm text-slate-700">What you can still use, and when each part expires.</p>
        <Grants view={view} />
      </Card>
      {view.topups.length > 0 && (
        <Card title="Buy credit" id="topups">
          <p className="mt-1 text-sm text-slate-700">Paid at once with your card on file{view.card ? ` (${view.card.brand.toUpperCase()} ending in ${view.card.last4})` : ''}; the credit is added as soon as the payment goes through.</p>
          <PortalTopups
            token={token}
            hasCard={Boolean(view.card)}
            offers={view.topups.map((t) => ({ denomination: t.denomination, amount_to_deposit: t.amountToDeposit, amount_to_charge: t.amountToCharge, label: `${formatUnits(t.amountToDeposit)} ${t.denomination}`, price: formatCents(t.amountToCharge) }))}
          />
        </Card>
      )}
      {view.refills.length > 0 && (
        <Card title="Automatic refills" id="refills">
          <p className="mt-1 text-sm text-slate-700">When a balance falls below its threshold, your card is charged for more. Turn it off to stop these charges; turn it on again at any time.</p>
          <ul className="mt-2 divide-y divide-slate-200">
            {view.refills.map((r) => (
              <RefillSwitch key={r.denomination} token={token} denomination={r.denomination} on={r.on} summary={`${formatUnits(r.amount)} ${r.denomination} for ${formatCents(r.usd)} when below ${formatUnits(r.threshold)}`} />
            ))}
          </ul>
        </Card>
      )}
      <section aria-label="Usage">
        <UsageChart title={`Usage, last ${USAGE_CHART_DAYS} days`} description="Completed events per day (UTC), by type." days={usage.days} types={usage.types} />
      </section>
      <Card title="Plan" id="plan">
        <Plan view={view} />
      </Card>
      <Card title="Payment card" id="card">
        <p className="mt-2 text-slate-800">
          {view.card ? `${view.card.brand.toUpperCase()} ending in ${view.card.last4}, expires ${String(view.card.expMonth).padStart(2, '0')}/${view.card.expYear}` : 'No card on file.'}
        </p>
        <h3 className="mt-4 font-medium">{view.card ? 'Replace your card' : 'Add a card'}</h3>
        {view.publishableKey ? (
          <PortalCardForm
            token={token}
            publishableKey={view.publishableKey}
            stripeJsUrl={local ? `${local}/stripe-js/v3` : null}
            // A plan waiting for a card starts with it, at the price shown above: the card is charged only that.
            quote={view.plan?.status === 'PENDING_PAYMENT_METHOD' ? { plan_id: view.plan.id, charge: view.plan.charge } : null}
          />
        ) : (
          <p className="mt-2 rounded bg-amber-50 p-3 text-amber-900">{view.companyName} has not set up card payments yet. Please contact them.</p>
        )}
      </Card>
      <Card title="Recent charges" id="charges">
        <p className="mt-1 text-sm text-slate-700">The last {PORTAL_CHARGES}, newest first.</p>
        <Charges view={view} token={token} />
      </Card>
      <p className="text-sm text-slate-700">This page is for you alone: do not share its address. It works until {day(view.expiresAt)}, {view.expiresAt.toISOString().slice(11, 16)} UTC.</p>
    </main>
  );
}
