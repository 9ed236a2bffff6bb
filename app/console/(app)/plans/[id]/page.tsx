import Link from 'next/link';
import { requireUser } from '@/lib/console/next-auth';
import { getDb } from '@/lib/db/client';
import { getPlan, planBalances } from '@/lib/billing/catalog/plans';
import { Decimal } from '@/lib/money';
import { orNotFound } from '@/lib/console/forms';
import { listAccountsOnPlan } from '@/lib/console/queries';
import type { BillingRule, Component } from '@/lib/billing/events/rate-card';
import { formatCents, formatTime, formatUnits, planSummary } from '@/lib/console/format';
import { Badge, Empty, Facts, PageHeader, Section, Table, Td, linkClass , Time } from '@/components/console/ui';
import { ListPage } from '@/components/console/list-page';

export const metadata = { title: 'Plan' };

export default async function PlanPage({ params, searchParams }: { params: Promise<{ id: string }>; searchParams: Promise<{ after?: string }> }) {
  const user = await requireUser();
  const { id } = await params;
  const { after } = await searchParams;
  const db = await getDb();
  const plan = await orNotFound(getPlan({ db, companyId: user.companyId, planId: id }));
  const accounts = await listAccountsOnPlan({ db, companyId: user.companyId, planId: plan.id, limit: 25, startingAfter: after });
  const rules = plan.billingRules as BillingRule[];
  const flags = Object.entries(plan.flags as Record<string, boolean>);
  return (
    <>
      <PageHeader title={plan.name} back={{ href: '/console/plans', label: 'Plans' }} description={<span className="font-mono text-sm">{plan.id}</span>} />
      <Section title="Price">
        <Facts
          items={[
            ['Price', planSummary(plan)],
            ['Overage', plan.overageChargeMode === 'postpay' ? 'Billed at renewal for units used beyond the included amount' : 'Not billed'],
            ['Threshold alert', plan.thresholdAlertPercentage ? `At ${plan.thresholdAlertPercentage}% of an included balance used` : 'None'],
            ['Created', formatTime(plan.createdAt)],
          ]}
        />
      </Section>
      <Section title="Included balances">
        {planBalances(plan).length === 0 ? (
          <Empty>This plan includes no balances.</Empty>
        ) : (
          <Table caption="Included balances" head={['Denomination', 'Included per period', 'Overage per unit', 'Variable price per unit']}>
            {planBalances(plan).map((b) => (
              <tr key={b.denomination}>
                <Td className="font-medium">{b.denomination}</Td>
                <Td className="tabular-nums">{formatUnits(b.amount)}</Td>
                <Td>{b.overage_charge_amount ? formatCents(b.overage_charge_amount) : '—'}</Td>
                <Td>{b.variable_unit_price !== null ? `$${formatUnits(new Decimal(b.variable_unit_price).dividedBy(100).toFixed())}` : 'Fixed amount'}</Td>
              </tr>
            ))}
          </Table>
        )}
      </Section>
      <Section title="Billing rules" description="Events of other types are recorded but not billed.">
        {rules.length === 0 ? (
          <Empty>No billing rules: events are billed only when they state their own cost.</Empty>
        ) : (
          <Table caption="Billing rules" head={['#', 'Event type', 'When', 'Per event', 'By quantity']}>
            {rules.map((r, i) => (
              <tr key={i}>
                <Td className="tabular-nums">{i}</Td>
                <Td className="font-medium">{r.type}</Td>
                <Td>{r.filters && Object.keys(r.filters).length ? Object.entries(r.filters).map(([k, v]) => `${k} = ${Array.isArray(v) ? v.join(' or ') : String(v)}`).join(', ') : 'Always'}</Td>
                <Td className="tabular-nums">
                  {formatUnits(r.amount ?? '0')} {r.denomination}
                </Td>
                <Td>{r.components?.length ? r.components.map((c, j) => <div key={j}>{componentText(c, r.denomination)}</div>) : '—'}</Td>
              </tr>
            ))}
          </Table>
        )}
      </Section>
      <Section title="Flags">
        {flags.length === 0 ? <p className="text-slate-700">No flags.</p> : <p>{flags.map(([k, v]) => `${k}: ${v ? 'on' : 'off'}`).join(', ')}</p>}
      </Section>
      <Section title="Accounts using this plan" id="accounts" description="On the plan now, or moving to it at their next renewal; newest first.">
        <ListPage page={accounts} after={after} basePath={`/console/plans/${plan.id}`} pagerLabel="Pages of accounts" empty={after ? 'No more accounts.' : 'No account uses this plan yet.'}>
          {(items) => (
          <Table caption="Accounts using this plan" head={['Name', 'Email', 'Status', 'Next renewal']}>
            {items.map((a) => (
              <tr key={a.id}>
                <Td className="font-medium">
                  <Link href={`/console/accounts/${a.id}`} className={linkClass}>
                    {a.name}
                  </Link>
                </Td>
                <Td className="break-all">{a.email}</Td>
                <Td>{a.planId === plan.id ? <Badge value={a.planStatus} /> : <Badge value="Moving here at renewal" tone="blue" />}</Td>
                <Td><Time value={a.nextPlanRenewal} /></Td>
              </tr>
            ))}
          </Table>
          )}
        </ListPage>
      </Section>
    </>
  );
}

/** One component of a rule, in words: its quantity and its price. */
function componentText(c: Component, denomination: string): string {
  if ('unit_amount' in c) return `${c.quantity} × ${formatUnits(c.unit_amount)} ${denomination}`;
  if ('package' in c) return `${c.quantity}: ${formatUnits(c.package.amount)} ${denomination} per ${formatUnits(c.package.size)} begun`;
  const tiers = c.tiers.map((t) => `${t.up_to === null ? 'above' : `up to ${formatUnits(t.up_to)}`} at ${formatUnits(t.unit_amount)}${t.flat_amount ? ` + ${formatUnits(t.flat_amount)}` : ''}`);
  return `${c.quantity} (${c.tiers_mode === 'graduated' ? 'graduated, counted this period' : 'volume'}): ${tiers.join('; ')} ${denomination}`;
}
