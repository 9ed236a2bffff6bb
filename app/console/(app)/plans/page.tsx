import Link from 'next/link';
import { requireUser } from '@/lib/console/next-auth';
import { getDb } from '@/lib/db/client';
import { listPlans, planBalances } from '@/lib/billing/catalog/plans';
import { formatDate, formatUnits, planSummary } from '@/lib/console/format';
import { PageHeader, Table, Td, buttonLinkClass, linkClass } from '@/components/console/ui';
import { ListPage } from '@/components/console/list-page';

export const metadata = { title: 'Plans' };

export default async function PlansPage({ searchParams }: { searchParams: Promise<{ after?: string }> }) {
  const user = await requireUser();
  const { after } = await searchParams;
  const page = await listPlans({ db: await getDb(), companyId: user.companyId, page: { limit: 50, starting_after: after } });
  return (
    <>
      <PageHeader
        title="Plans"
        description="Presets of price, included balances and event prices, newest first."
        actions={
          <Link href="/console/plans/new" className={buttonLinkClass}>
            New plan
          </Link>
        }
      />
      <ListPage
        page={page}
        after={after}
        basePath="/console/plans"
        pagerLabel="Plan pages"
        empty={
          <>
            No plans yet. <Link href="/console/plans/new" className={linkClass}>Create the first one</Link>.
          </>
        }
      >
        {(items) => (
        <Table caption="Plans" head={['Name', 'Price', 'Included', 'Billing rules', 'Created', 'Id']}>
          {items.map((p) => (
            <tr key={p.id}>
              <Td className="font-medium">
                <Link href={`/console/plans/${p.id}`} className={linkClass}>
                  {p.name}
                </Link>
              </Td>
              <Td className="whitespace-nowrap">{planSummary(p)}</Td>
              <Td>{planBalances(p).map((b) => `${formatUnits(b.amount)} ${b.denomination}`).join(', ') || '—'}</Td>
              <Td>{(p.billingRules as unknown[]).length}</Td>
              <Td className="whitespace-nowrap">{formatDate(p.createdAt)}</Td>
              <Td mono>{p.id}</Td>
            </tr>
          ))}
        </Table>
        )}
      </ListPage>
    </>
  );
}
