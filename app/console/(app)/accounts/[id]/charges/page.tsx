import { requireUser } from '@/lib/auth';
import { getDb } from '@/lib/db/client';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { listCharges } from '@/lib/billing/charges/charges';
import { orNotFound } from '@/lib/console/forms';
import { ChargesTable } from '@/components/console/account-tables';
import { Empty, PageHeader, Pager } from '@/components/console/ui';

export const metadata = { title: 'Charges' };

export default async function ChargesPage({ params, searchParams }: { params: Promise<{ id: string }>; searchParams: Promise<{ after?: string }> }) {
  const user = await requireUser();
  const { id } = await params;
  const { after } = await searchParams;
  const db = await getDb();
  const account = await orNotFound(getAccount({ db, companyId: user.companyId, accountId: id }));
  const page = await listCharges({ db, accountId: account.id, page: { limit: 50, starting_after: after } });
  const last = page.items[page.items.length - 1];
  return (
    <>
      <PageHeader title={`Charges of ${account.name}`} back={{ href: `/console/accounts/${account.id}`, label: account.name }} description="Card charges, newest first." />
      {page.items.length === 0 ? <Empty>No charges{after ? ' older than these' : ' yet'}.</Empty> : <ChargesTable rows={page.items} />}
      <Pager basePath={`/console/accounts/${account.id}/charges`} params={{}} nextAfter={page.hasMore && last ? last.id : null} isFirst={!after} label="Charge pages" />
    </>
  );
}
