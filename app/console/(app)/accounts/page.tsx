import Link from 'next/link';
import { requireUser } from '@/lib/auth';
import { getReadDb } from '@/lib/db/replica';
import { listAccounts } from '@/lib/billing/accounts/accounts';
import { formatDate } from '@/lib/console/format';
import { Badge, PageHeader, Table, Td, buttonLinkClass, linkClass } from '@/components/console/ui';
import { ListPage } from '@/components/console/list-page';

export const metadata = { title: 'Accounts' };

const PAGE = 50;

export default async function AccountsPage({ searchParams }: { searchParams: Promise<{ after?: string; q?: string }> }) {
  const user = await requireUser();
  const { after, q } = await searchParams;
  const search = q?.trim().slice(0, 200) || undefined;
  const page = await listAccounts({ db: await getReadDb(), companyId: user.companyId, page: { limit: PAGE, starting_after: after, search } });
  return (
    <>
      <PageHeader
        title="Accounts"
        description="Your customers, newest first."
        actions={
          <Link href="/console/accounts/new" className={buttonLinkClass}>
            New account
          </Link>
        }
      />
      <form role="search" aria-label="Accounts" className="mb-4 flex flex-wrap items-end gap-2">
        <div className="min-w-0 flex-1 sm:max-w-md">
          <label htmlFor="q" className="block text-sm font-medium">
            Search by name, email, external id or account id
          </label>
          <input id="q" name="q" type="search" defaultValue={search} className="mt-1 w-full rounded border border-slate-500 px-3 py-2" />
        </div>
        <button className="rounded bg-blue-800 px-4 py-2 font-medium text-white hover:bg-blue-900">Search</button>
        {search && (
          <Link href="/console/accounts" className={`${linkClass} py-2`}>
            Clear search
          </Link>
        )}
      </form>
      <ListPage
        page={page}
        after={after}
        basePath="/console/accounts"
        params={{ q: search }}
        pagerLabel="Account pages"
        empty={
          search ? (
            <>No account matches “{search}”.</>
          ) : (
            <>
              No accounts yet. <Link href="/console/accounts/new" className={linkClass}>Create one</Link>, or send <code>POST /v1/companies/{user.companyId}/accounts</code>.
            </>
          )
        }
      >
        {(items) => (
        <Table caption={search ? `Accounts matching ${search}` : 'Accounts'} head={['Name', 'Email', 'External id', 'Plan status', 'Created', 'Id']}>
          {items.map((a) => (
            <tr key={a.id}>
              <Td className="font-medium">
                <Link href={`/console/accounts/${a.id}`} className={linkClass}>
                  {a.name}
                </Link>
              </Td>
              <Td className="break-all">{a.email}</Td>
              <Td mono className="break-all">
                {a.externalId ?? ''}
              </Td>
              <Td>
                <Badge value={a.planStatus} />
              </Td>
              <Td className="whitespace-nowrap">{formatDate(a.createdAt)}</Td>
              <Td mono>{a.id}</Td>
            </tr>
          ))}
        </Table>
        )}
      </ListPage>
    </>
  );
}
