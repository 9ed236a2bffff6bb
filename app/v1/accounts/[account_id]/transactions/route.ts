import { list, withCompany, declareMethods } from '@/lib/api/route';
import { ledgerQuery } from '@/lib/api/schemas/balances';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { listTransactions, serializeTransaction } from '@/lib/billing/balances/balances';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/accounts/{account_id}/transactions – the ledger, newest first
  GET: withCompany({ query: ledgerQuery }, async ({ db, company, params, query }) => {
    const account = await getAccount({ db, companyId: company.id, accountId: params.account_id });
    return list(await listTransactions({ db, accountId: account.id, page: query, denomination: query.denomination }), serializeTransaction);
  }),
});
