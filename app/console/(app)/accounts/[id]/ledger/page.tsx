import Link from 'next/link';
import { requireUser } from '@/lib/auth';
import { getReadDb } from '@/lib/db/replica';
import { now } from '@/lib/clock';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { listBalances, listTransactions } from '@/lib/billing/balances/balances';
import { orNotFound } from '@/lib/console/forms';
import { LedgerTable } from '@/components/console/account-tables';
import { PageHeader, linkClass } from '@/components/console/ui';
import { ListPage } from '@/components/console/list-page';

export const metadata = { title: 'Ledger' };

export default async function LedgerPage({ params, searchParams }: { params: Promise<{ id: string }>; searchParams: Promise<{ after?: string; denomination?: string }> }) {
  const user = await requireUser();
  const { id } = await params;
  const { after, denomination: asked } = await searchParams;
  const db = await getReadDb();
  const account = await orNotFound(getAccount({ db, companyId: user.companyId, accountId: id }));
  const denominations = (await listBalances({ db, accountId: account.id, now: now() })).map((b) => b.denomination);
  const denomination = asked && denominations.includes(asked) ? asked : undefined;
  const page = await listTransactions({ db, accountId: account.id, denomination, page: { limit: 50, starting_after: after } });
  const base = `/console/accounts/${account.id}/ledger`;
  const exportHref = `${base}/export${denomination ? `?${new URLSearchParams({ denomination })}` : ''}`;
  return (
    <>
      <PageHeader title={`Ledger of ${account.name}`} back={{ href: `/console/accounts/${account.id}`, label: account.name }} description="Every change to any of the account's balances, newest first." />
      <form role="search" aria-label="Filter the ledger" className="mb-4 flex flex-wrap items-end gap-3">
        <div>
          <label htmlFor="f-denomination" className="block text-sm font-medium">
            Balance
          </label>
          <select id="f-denomination" name="denomination" defaultValue={denomination ?? ''} className="mt-1 block min-h-[2.625rem] rounded border border-slate-500 bg-white px-3 py-2">
            <option value="">All balances</option>
            {denominations.map((d) => (
              <option key={d} value={d}>
                {d}
              </option>
            ))}
          </select>
        </div>
        <button className="rounded bg-blue-800 px-4 py-2 font-medium text-white hover:bg-blue-900">Show</button>
        {denomination && (
          <Link href={base} className={`${linkClass} py-2`}>
            All balances
          </Link>
        )}
        <a href={exportHref} download className={`${linkClass} py-2`}>
          Download CSV{denomination ? ` of ${denomination}` : ''}
        </a>
      </form>
      <ListPage page={page} after={after} basePath={base} params={{ denomination }} pagerLabel="Ledger pages" empty={`No balance changes${after ? ' older than these' : ' yet'}.`}>
        {(items) => <LedgerTable rows={items} />}
      </ListPage>
    </>
  );
}
