import Link from 'next/link';
import { requireUser } from '@/lib/auth';
import { getDb } from '@/lib/db/client';
import { listAccounts } from '@/lib/billing/accounts/accounts';

export const metadata = { title: 'Accounts' };

export default async function AccountsPage({ searchParams }: { searchParams: Promise<{ after?: string; q?: string }> }) {
  const user = await requireUser();
  const { after, q } = await searchParams;
  const page = await listAccounts({ db: await getDb(), companyId: user.companyId, page: { limit: 50, starting_after: after, search: q } });
  const last = page.items[page.items.length - 1];
  return (
    <section>
      <div className="flex flex-wrap items-end justify-between gap-3">
        <h1 className="text-xl font-semibold">Accounts</h1>
        <form role="search" className="flex gap-2">
          <label htmlFor="q" className="sr-only">Search accounts</label>
          <input id="q" name="q" defaultValue={q} placeholder="Name, email or id" className="rounded border border-slate-400 px-3 py-1.5" />
          <button className="rounded bg-blue-800 px-3 py-1.5 text-white">Search</button>
        </form>
      </div>
      {page.items.length === 0 ? (
        <p className="mt-6 text-slate-700">No accounts yet. Create one with <code>POST /v1/companies/{user.companyId}/accounts</code>.</p>
      ) : (
        <div className="mt-4 overflow-x-auto rounded border border-slate-200 bg-white">
          <table className="w-full text-left text-sm">
            <caption className="sr-only">Accounts of {user.companyName}</caption>
            <thead className="bg-slate-100 text-slate-700">
              <tr>
                <th scope="col" className="px-3 py-2">Name</th>
                <th scope="col" className="px-3 py-2">Email</th>
                <th scope="col" className="px-3 py-2">Plan status</th>
                <th scope="col" className="px-3 py-2">Id</th>
                <th scope="col" className="px-3 py-2">Created</th>
              </tr>
            </thead>
            <tbody>
              {page.items.map((a) => (
                <tr key={a.id} className="border-t border-slate-200">
                  <td className="px-3 py-2 font-medium">{a.name}</td>
                  <td className="px-3 py-2">{a.email}</td>
                  <td className="px-3 py-2">{a.planStatus}</td>
                  <td className="px-3 py-2 font-mono text-xs">{a.id}</td>
                  <td className="px-3 py-2">{a.createdAt.toISOString().slice(0, 10)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {page.hasMore && last && (
        <p className="mt-4">
          <Link className="text-blue-800 underline" href={`/console?after=${last.id}${q ? `&q=${encodeURIComponent(q)}` : ''}`}>Next page</Link>
        </p>
      )}
    </section>
  );
}
