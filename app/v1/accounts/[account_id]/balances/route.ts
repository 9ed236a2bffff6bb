import { pageOf, withCompany, declareMethods } from '@/lib/api/route';
import { listQuery } from '@/lib/api/pagination';
import { now } from '@/lib/clock';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { listBalances, serializeBalance } from '@/lib/billing/balances/balances';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/accounts/{account_id}/balances – the account's balances, newest first as every list, paged
  GET: withCompany({ query: listQuery }, async ({ db, company, params, query }) => {
    const account = await getAccount({ db, companyId: company.id, accountId: params.account_id });
    const newestFirst = (await listBalances({ db, accountId: account.id, now: now() })).sort(
      (a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0),
    );
    return pageOf(newestFirst.map(serializeBalance), query, (b) => b.id);
  }),
});
