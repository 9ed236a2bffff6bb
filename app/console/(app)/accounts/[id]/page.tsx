import Link from 'next/link';
import { requireUser } from '@/lib/console/next-auth';
import { getDb } from '@/lib/db/client';
import { now } from '@/lib/clock';
import { sub } from '@/lib/money';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { listLivePortalLinks } from '@/lib/billing/accounts/portal';
import { listBalances, listTransactions, type Balance } from '@/lib/billing/balances/balances';
import { grantState, listGrants, settleDueGrants } from '@/lib/billing/balances/grants';
import { listEvents } from '@/lib/billing/events/events';
import { listCharges } from '@/lib/billing/charges/charges';
import { orNotFound } from '@/lib/console/forms';
import { latestCollectorLink, planChoices } from '@/lib/console/queries';
import { formatCents, formatDate, formatTime, formatUnits, planSummary } from '@/lib/console/format';
import { ActionForm } from '@/components/console/action-form';
import { UsageChart } from '@/components/usage-chart';
import { accountUsageByDay, USAGE_CHART_DAYS } from '@/lib/console/usage';
import { ChangePlanForm, GrantForm, RefillForm, SpendLimitsForm } from '@/components/console/account-forms';
import { getSpendLimits } from '@/lib/billing/balances/spend-limits';
import { Badge, Empty, Facts, PageHeader, Section, Table, Td, linkClass } from '@/components/console/ui';
import { ChargesTable, EventsTable, LedgerTable } from '@/components/console/account-tables';
import { changePlanAction, collectorLinkAction, grantUnitsAction, portalLinkAction, removeRefillAction, revokeAllPortalLinksAction, revokePortalLinkAction, setRefillAction, setSpendLimitsAction, voidGrantAction } from '../actions';

export const metadata = { title: 'Account' };

const RECENT = 10;
const GRANTS = 50;

function refillText(b: Balance): React.ReactNode {
  const parts: string[] = [];
  if (b.refillAmount && b.nextPeriodicRefill) {
    parts.push(`Monthly: +${formatUnits(b.refillAmount)} for ${formatCents(b.refillUsdAmount)}, next ${formatDate(b.nextPeriodicRefill)}`);
  }
  if (b.refillThreshold && b.refillAmount) {
    parts.push(`Below ${formatUnits(b.refillThreshold)}: +${formatUnits(b.refillAmount)} for ${formatCents(b.refillUsdAmount)}${b.refillMaxChargesPerMonth ? `, at most ${b.refillMaxChargesPerMonth} a month` : ''}`);
  }
  if (!parts.length) return <span className="text-slate-700">None</span>;
  return parts.map((p) => (
    <span key={p} className="block">
      {p}
    </span>
  ));
}

export default async function AccountPage({ params }: { params: Promise<{ id: string }> }) {
  const user = await requireUser();
  const { id } = await params;
  const db = await getDb();
  const at = now();
  const account = await orNotFound(getAccount({ db, companyId: user.companyId, accountId: id }));
  // Expiries due are written first, so the grants and the ledger below agree with each other.
  await settleDueGrants(db, { companyId: user.companyId, accountId: account.id }, at);
  const [balances, ledger, events, charges, plans, link, portalLinks, usage, limits] = await Promise.all([
    listBalances({ db, accountId: account.id, now: at }),
    listTransactions({ db, accountId: account.id, page: { limit: RECENT } }),
    listEvents({ db, companyId: user.companyId, q: { limit: RECENT, account_id: account.id }, now: at }),
    listCharges({ db, accountId: account.id, page: { limit: RECENT } }),
    planChoices({ db, companyId: user.companyId, include: [account.planId, account.scheduledPlanId] }),
    latestCollectorLink({ db, accountId: account.id }),
    listLivePortalLinks({ db, accountId: account.id, now: at }),
    accountUsageByDay({ db, companyId: user.companyId, accountId: account.id, now: at }),
    getSpendLimits({ db, companyId: user.companyId, accountId: account.id, now: at }),
  ]);
  const grants = (
    await Promise.all(balances.map((b) => listGrants(db, { accountId: account.id, denomination: b.denomination, status: 'all', page: { limit: GRANTS } }, at)))
  ).flatMap((page) => page.items.map((g) => ({ ...g, ...grantState(g, at) })));
  const planById = new Map(plans.map((p) => [p.id, p]));
  const plan = account.planId ? planById.get(account.planId) : undefined;
  const scheduledPlan = account.scheduledPlanId ? planById.get(account.scheduledPlanId) : undefined;
  const pm = account.paymentMethod;
  const denominations = balances.map((b) => b.denomination);
  const scheduledRefills = balances.filter((b) => b.scheduledRefill);
  const planOptions = plans.map((p) => ({ id: p.id, name: p.name, summary: planSummary(p), charge: p.chargeAmount }));
  const linkState = !link ? null : link.usedAt ? `used ${formatTime(link.usedAt)}` : link.expiresAt.getTime() <= at.getTime() ? `expired ${formatTime(link.expiresAt)}` : `open until ${formatTime(link.expiresAt)}`;

  return (
    <>
      <PageHeader
        title={account.name}
        back={{ href: '/console/accounts', label: 'Accounts' }}
        description={
          <>
            <span className="break-all">{account.email}</span> · <span className="font-mono text-sm">{account.id}</span>
          </>
        }
      />
      <nav aria-label="On this page" className="mb-4 flex flex-wrap gap-x-4 gap-y-1 text-sm">
        {[
          ['#balances', 'Balances'],
          ['#grants', 'Grants'],
          ['#spend-limits', 'Spend limits'],
          ['#usage', 'Usage'],
          ['#manage', 'Grant, refill, plan'],
          ['#ledger', 'Ledger'],
          ['#events', 'Events'],
          ['#charges', 'Charges'],
        ].map(([href, label]) => (
          <a key={href} href={href} className={linkClass}>
            {label}
          </a>
        ))}
      </nav>

      <Section title="Plan and payment">
        <Facts
          items={[
            ['Plan', plan ? <Link href={`/console/plans/${plan.id}`} className={linkClass}>{plan.name}</Link> : account.planId ? <span className="font-mono text-xs">{account.planId}</span> : 'No plan'],
            ['Status', <Badge key="s" value={account.planStatus} />],
            ['Price', plan ? planSummary({ chargeAmount: account.planChargeAmount ?? plan.chargeAmount, billingPeriod: plan.billingPeriod }) : '—'],
            ['Current period', account.lastPlanRenewal ? `${formatTime(account.lastPlanRenewal)} to ${formatTime(account.nextPlanRenewal)}` : '—'],
            ['Payment method', pm ? `${pm.brand.toUpperCase()} ending ${pm.last4}, expires ${String(pm.exp_month).padStart(2, '0')}/${pm.exp_year}` : 'No card on file'],
            ['External id', account.externalId ? <span className="break-all font-mono text-xs">{account.externalId}</span> : '—'],
            ['Processor customer', account.processorId ? <span className="font-mono text-xs">{account.processorId}</span> : '—'],
            ['Flags', account.flags.length ? account.flags.map((f) => `${f.name}: ${f.enabled ? 'on' : 'off'}`).join(', ') : 'None'],
            ['Created', formatTime(account.createdAt)],
            ...(Object.keys(account.metadata as object).length ? [['Metadata', <code key="m" className="break-all text-xs">{JSON.stringify(account.metadata)}</code>] as [string, React.ReactNode]] : []),
          ]}
        />
      </Section>

      <Section title="Scheduled changes" id="scheduled">
        {!scheduledPlan && !account.scheduledPlanId && !scheduledRefills.length ? (
          <p className="text-slate-700">Nothing scheduled.</p>
        ) : (
          <ul className="list-disc space-y-1 pl-5">
            {account.scheduledPlanId && (
              <li>
                Moves to plan <strong>{scheduledPlan?.name ?? account.scheduledPlanId}</strong> at the next renewal ({formatTime(account.nextPlanRenewal)}).
              </li>
            )}
            {scheduledRefills.map((b) => {
              const s = b.scheduledRefill as { amount: string; usd_charge: number; effective_at?: string };
              return (
                <li key={b.id}>
                  Monthly refill of {b.denomination} becomes {formatUnits(s.amount)} for {formatCents(s.usd_charge)} from {formatDate(s.effective_at ?? b.nextPeriodicRefill)}.
                </li>
              );
            })}
          </ul>
        )}
      </Section>

      <Section title="Balances" id="balances" description="Pending is held by events not yet completed; available is what gated events can use.">
        {balances.length === 0 ? (
          <Empty>No balances yet. Grant units below, or attach a plan.</Empty>
        ) : (
          <Table caption="Balances" head={['Denomination', 'Amount', 'Pending', 'Available', 'Refill', '']}>
            {balances.map((b) => (
              <tr key={b.id}>
                <Td className="font-medium">{b.denomination}</Td>
                <Td className="tabular-nums">{formatUnits(b.amount)}</Td>
                <Td className="tabular-nums">{formatUnits(b.pending)}</Td>
                <Td className="font-semibold tabular-nums">{formatUnits(sub(b.amount, b.pending))}</Td>
                <Td>{refillText(b)}</Td>
                <Td>
                  {(b.refillAmount || b.refillThreshold) && (
                    <ActionForm action={removeRefillAction.bind(null, account.id, b.denomination)} submitLabel="Turn off refill" confirm={`Turn off ${b.denomination} refill`} variant="secondary" className="space-y-2" label={`Turn off ${b.denomination} refill`} />
                  )}
                </Td>
              </tr>
            ))}
          </Table>
        )}
      </Section>

      <Section title="Credit grants" id="grants" description={`Every unit added is a grant, drawn by priority (0 first), then soonest expiry, then oldest. Live grants first; the ${GRANTS} newest of each denomination.`}>
        {grants.length === 0 ? (
          <Empty>No grants yet.</Empty>
        ) : (
          <Table caption="Credit grants" head={['Denomination', 'Category', 'Amount', 'Remaining', 'Priority', 'Expires', 'Status', '']}>
            {[...grants].sort((x, y) => Number(y.status === 'live') - Number(x.status === 'live')).map((g) => (
              <tr key={g.id}>
                <Td className="font-medium">{g.denomination}</Td>
                <Td>
                  {g.category}
                  <span className="block text-xs text-slate-700">{g.source}</span>
                </Td>
                <Td className="tabular-nums">{formatUnits(g.amount)}</Td>
                <Td className="font-semibold tabular-nums">{formatUnits(g.remaining)}</Td>
                <Td className="tabular-nums">{g.priority}</Td>
                <Td>{g.expiresAt ? formatTime(g.expiresAt) : 'Never'}</Td>
                <Td>
                  <Badge value={g.status} tone={g.status === 'live' ? 'green' : g.status === 'scheduled' ? 'amber' : 'slate'} />
                </Td>
                <Td>
                  {(g.status === 'live' || g.status === 'scheduled') && (
                    <ActionForm action={voidGrantAction.bind(null, account.id, g.id)} submitLabel="Void" confirm={`Void ${formatUnits(g.remaining)} ${g.denomination}`} variant="danger" pendingLabel="Voiding…" label={`Void the grant of ${formatUnits(g.amount)} ${g.denomination} made ${formatTime(g.createdAt)}`} className="space-y-2" />
                  )}
                </Td>
              </tr>
            ))}
          </Table>
        )}
      </Section>

      <Section title="Spend limits" id="spend-limits" description="What the account may spend per denomination in a UTC day, week (from Monday) or month: completed events plus live holds. Past a reject limit events are rejected; past a notify limit spend_limit_reached is sent once per period.">
        {limits.length === 0 ? (
          <Empty>No spend limits.</Empty>
        ) : (
          <Table caption="Spend limits" head={['Denomination', 'Per', 'Limit', 'Past it', 'Spent this period', 'Period']}>
            {limits.map((l) => (
              <tr key={`${l.denomination}-${l.period}-${l.action}`}>
                <Td className="font-medium">{l.denomination}</Td>
                <Td>{l.period}</Td>
                <Td className="tabular-nums">{formatUnits(l.limit)}</Td>
                <Td>{l.action === 'reject' ? 'Reject events' : 'Notify once'}</Td>
                <Td className="font-semibold tabular-nums">{formatUnits(l.spent)}</Td>
                <Td>
                  {formatTime(l.periodStart)} to {formatTime(l.periodEnd)}
                </Td>
              </tr>
            ))}
          </Table>
        )}
        <div className="mt-4">
          <SpendLimitsForm
            action={setSpendLimitsAction.bind(null, account.id)}
            limits={limits.map((l) => ({ denomination: l.denomination, period: l.period, limit: l.limit, action: l.action }))}
            denominations={denominations}
          />
        </div>
      </Section>

      <div id="manage" className="mb-6 grid grid-cols-1 gap-4 lg:grid-cols-2">
        <Section title="Grant units">
          <GrantForm action={grantUnitsAction.bind(null, account.id)} denominations={denominations} />
        </Section>
        <Section title="Set refill">
          <RefillForm action={setRefillAction.bind(null, account.id)} denominations={denominations} />
        </Section>
        <Section title="Change plan">
          {planOptions.length ? (
            <ChangePlanForm action={changePlanAction.bind(null, account.id)} plans={planOptions} currentPlanId={account.planId} />
          ) : (
            <p className="text-slate-700">
              No plans yet. <Link href="/console/plans/new" className={linkClass}>Create a plan</Link> first.
            </p>
          )}
        </Section>
        <Section title="Card collector link">
          <p className="mb-3 text-sm text-slate-700">
            A one-time page where the customer enters a card{account.planStatus === 'PENDING_PAYMENT_METHOD' ? '; the plan starts when they do' : ''}. Only a fresh link can be shown: links are stored as hashes.
            {linkState && <span className="block">Latest link: {linkState}.</span>}
          </p>
          <ActionForm action={collectorLinkAction.bind(null, account.id)} submitLabel="Create a new link" pendingLabel="Creating…" variant="secondary" label="Create a card collector link" />
        </Section>
        <Section title="Portal link">
          <p className="mb-3 text-sm text-slate-700">
            A page for the customer, without sign-in: balances, plan and next renewal, the last 20 charges, and a form to replace the card (an overdue renewal is retried at once). The link works for 24 hours unless revoked; only a fresh one can be shown.
          </p>
          <ActionForm action={portalLinkAction.bind(null, account.id)} submitLabel="Portal link" pendingLabel="Creating…" variant="secondary" label="Create a customer portal link" />
          {portalLinks.length > 0 && (
            <div className="mt-4 border-t border-slate-200 pt-3">
              <p className="text-sm text-slate-700">Links that work now. Revoke one that was forwarded or leaked: its page and card form stop at once.</p>
              <ul className="mt-2 space-y-2" aria-label="Live portal links">
                {portalLinks.map((l) => (
                  <li key={l.id} className="flex flex-wrap items-center justify-between gap-2 text-sm">
                    <span>
                      Made {formatTime(l.createdAt)}, works until {formatTime(l.expiresAt)}
                    </span>
                    <ActionForm action={revokePortalLinkAction.bind(null, account.id, l.id)} submitLabel="Revoke" confirm="Revoke this link" variant="danger" pendingLabel="Revoking…" label={`Revoke the portal link made ${formatTime(l.createdAt)}`} className="space-y-2" />
                  </li>
                ))}
              </ul>
            </div>
          )}
          <div className="mt-3">
            <ActionForm action={revokeAllPortalLinksAction.bind(null, account.id)} submitLabel="Revoke all links" confirm={portalLinks.length ? `Revoke all ${portalLinks.length}` : 'Revoke all'} variant="danger" pendingLabel="Revoking…" label="Revoke every portal link of this account" className="space-y-2" />
          </div>
        </Section>
      </div>

      <Section title="Usage" id="usage" actions={
          <a href={`/console/accounts/${account.id}/usage/export`} download className={linkClass}>
            Download CSV
          </a>
        } description={`Completed events of the last ${USAGE_CHART_DAYS} days, by day (UTC) and type: what the customer portal shows. The CSV has the exact events, costs and quantities per day, type and denomination.`}>
        <UsageChart title={`Usage, last ${USAGE_CHART_DAYS} days`} days={usage.days} types={usage.types} />
      </Section>

      <Section title="Ledger" id="ledger" actions={
          <span className="flex flex-wrap gap-x-4">
            <Link href={`/console/accounts/${account.id}/ledger`} className={linkClass}>
              All ledger rows
            </Link>
            <a href={`/console/accounts/${account.id}/ledger/export`} download className={linkClass}>
              Download CSV
            </a>
          </span>
        } description={`The ${RECENT} latest changes to any balance.`}>
        {ledger.items.length === 0 ? (
          <Empty>No balance changes yet.</Empty>
        ) : (
          <LedgerTable rows={ledger.items} />
        )}
      </Section>

      <Section title="Events" id="events" actions={<Link href={`/console/events?account_id=${account.id}`} className={linkClass}>All events of this account</Link>} description={`The ${RECENT} latest.`}>
        {events.items.length === 0 ? (
          <Empty>No events yet.</Empty>
        ) : (
          <EventsTable caption="Latest events" rows={events.items} at={at} ids />
        )}
      </Section>

      <Section title="Charges" id="charges" actions={<Link href={`/console/accounts/${account.id}/charges`} className={linkClass}>All charges</Link>} description={`The ${RECENT} latest card charges.`}>
        {charges.items.length === 0 ? <Empty>No charges yet.</Empty> : <ChargesTable rows={charges.items} />}
      </Section>
    </>
  );
}
