import { requireUser } from '@/lib/auth';
import { getDb } from '@/lib/db/client';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { listTransactions } from '@/lib/billing/balances/balances';
import { orNotFound } from '@/lib/console/forms';
import { LedgerTable } from '@/components/console/account-tables';
import { Empty, PageHeader, Pager } from '@/components/console/ui';

export const metadata = { title: 'Ledger' };

export default async function LedgerPage({ params, searchParams }: { params: Promise<{ id: string }>; searchParams: Promise<{ after?: string }> }) {
  const user = await requireUser();
  const { id } = await params;
  const { after } = await searchParams;
  const db = await getDb();
  const account = await orNotFound(getAccount({ db, companyId: user.companyId, accountId: id }));
  const page = await listTransactions({ db, accountId: account.id, page: { limit: 50, starting_after: after } });
  const last = page.items[page.items.length - 1];
  return (
    <>
      <PageHeader title={`Ledger of ${account.name}`} back={{ href: `/console/accounts/${account.id}`, label: account.name }} description="Every change to any of the account's balances, newest first." />
      {page.items.length === 0 ? <Empty>No balance changes{after ? ' older than these' : ' yet'}.</Empty> : <LedgerTable rows={page.items} />}
      <Pager basePath={`/console/accounts/${account.id}/ledger`} params={{}} nextAfter={page.hasMore && last ? last.id : null} isFirst={!after} label="Ledger pages" />
    </>
  );
}
