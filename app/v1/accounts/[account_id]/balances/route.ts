import { pageOf, withCompany, declareMethods } from '@/lib/api/route';
import { listQuery } from '@/lib/api/pagination';
import { now } from '@/lib/clock';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { listBalances, serializeBalance } from '@/lib/billing/balances/balances';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/accounts/{account_id}/balances – the account's balances by denomination, paged
  GET: withCompany({ query: listQuery }, async ({ db, company, params, query }) => {
    const account = await getAccount({ db, companyId: company.id, accountId: params.account_id });
    return pageOf((await listBalances({ db, accountId: account.id, now: now() })).map(serializeBalance), query, (b) => b.id);
  }),
});
