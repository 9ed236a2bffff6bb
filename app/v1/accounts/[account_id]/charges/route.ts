import { list, withCompany, declareMethods } from '@/lib/api/route';
import { listQuery } from '@/lib/api/pagination';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { listCharges, serializeCharge } from '@/lib/billing/charges/charges';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/accounts/{account_id}/charges – every charge attempt, newest first
  GET: withCompany({ query: listQuery }, async ({ db, company, params, query }) => {
    const account = await getAccount({ db, companyId: company.id, accountId: params.account_id });
    return list(await listCharges({ db, accountId: account.id, page: query }), serializeCharge);
  }),
});
