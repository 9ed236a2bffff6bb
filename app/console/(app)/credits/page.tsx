import { requireUser } from '@/lib/auth';
import { getReadDb } from '@/lib/db/replica';
import { now } from '@/lib/clock';
import { creditsReport, dailyCredits } from '@/lib/billing/balances/credits-report';
import { formatCents, formatUnits } from '@/lib/console/format';
import { CreditsChart } from '@/components/console/credits-chart';
import { Empty, PageHeader, Section, Table, Td } from '@/components/console/ui';

export const metadata = { title: 'Credits' };

const DAYS = 30;

const split = (s: { paid: unknown; promotional: unknown }) => (
  <>
    <span className="block tabular-nums">{formatUnits(String(s.paid))} paid</span>
    <span className="block tabular-nums text-slate-700">{formatUnits(String(s.promotional))} promotional</span>
  </>
);

export default async function CreditsPage() {
  const user = await requireUser();
  const db = await getReadDb();
  const at = now();
  const today = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate());
  // Whole UTC days, today included: the same window as the chart.
  const [report, days] = await Promise.all([creditsReport(db, user.companyId, new Date(today - (DAYS - 1) * 86_400_000), new Date(today + 86_400_000)), dailyCredits(db, user.companyId, at, DAYS)]);
  return (
    <>
      <PageHeader title="Credits" description={`Credit granted, spent, expired and voided in the last ${DAYS} days, today included. Days are UTC.`} />
      <Section title="Report" description="Expired paid: what the paid units that expired had cost, revenue of credit that will never be used.">
        {report.denominations.length === 0 ? (
          <Empty>No credit granted, spent or expired in the last {DAYS} days.</Empty>
        ) : (
          <Table caption="Credits per denomination" head={['Denomination', 'Granted', 'Spent', 'Expired', 'Voided', 'Expired paid']}>
            {report.denominations.map((d) => (
              <tr key={d.denomination}>
                <Td className="font-medium">{d.denomination}</Td>
                <Td>{split(d.granted)}</Td>
                <Td>{split(d.spent)}</Td>
                <Td>{split(d.expired)}</Td>
                <Td>{split(d.voided)}</Td>
                <Td className="tabular-nums">{formatCents(d.expired_paid_cents)}</Td>
              </tr>
            ))}
          </Table>
        )}
      </Section>
      <div className="grid grid-cols-1 gap-4 lg:grid-cols-2">
        {[...days.entries()].map(([denomination, list]) => (
          <CreditsChart
            key={denomination}
            title={`Credits per day: ${denomination}`}
            description="Units granted, spent from grants and expired."
            points={list.map((d) => ({
              day: d.day,
              granted: Number(d.granted),
              spent: Number(d.spent),
              expired: Number(d.expired),
              labels: { granted: `${formatUnits(d.granted)} ${denomination}`, spent: `${formatUnits(d.spent)} ${denomination}`, expired: `${formatUnits(d.expired)} ${denomination}` },
            }))}
          />
        ))}
      </div>
    </>
  );
}
