import { requireUser } from '@/lib/auth';
import { getReadDb } from '@/lib/db/replica';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { listCharges } from '@/lib/billing/charges/charges';
import { orNotFound } from '@/lib/console/forms';
import { ChargesTable } from '@/components/console/account-tables';
import { PageHeader } from '@/components/console/ui';
import { ListPage } from '@/components/console/list-page';

export const metadata = { title: 'Charges' };

export default async function ChargesPage({ params, searchParams }: { params: Promise<{ id: string }>; searchParams: Promise<{ after?: string }> }) {
  const user = await requireUser();
  const { id } = await params;
  const { after } = await searchParams;
  const db = await getReadDb();
  const account = await orNotFound(getAccount({ db, companyId: user.companyId, accountId: id }));
  const page = await listCharges({ db, accountId: account.id, page: { limit: 50, starting_after: after } });
  return (
    <>
      <PageHeader title={`Charges of ${account.name}`} back={{ href: `/console/accounts/${account.id}`, label: account.name }} description="Card charges, newest first." />
      <ListPage page={page} after={after} basePath={`/console/accounts/${account.id}/charges`} pagerLabel="Charge pages" empty={`No charges${after ? ' older than these' : ' yet'}.`}>
        {(items) => <ChargesTable rows={items} />}
      </ListPage>
    </>
  );
}
