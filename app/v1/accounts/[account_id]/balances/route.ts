import { listAll, withCompany, declareMethods } from '@/lib/api/route';
import { now } from '@/lib/clock';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { listBalances, serializeBalance } from '@/lib/billing/balances/balances';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/accounts/{account_id}/balances – every balance of the account
  GET: withCompany({}, async ({ db, company, params }) => {
    const account = await getAccount({ db, companyId: company.id, accountId: params.account_id });
    return listAll((await listBalances({ db, accountId: account.id, now: now() })).map(serializeBalance));
  }),
});
