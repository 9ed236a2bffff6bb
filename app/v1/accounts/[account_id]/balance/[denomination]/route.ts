import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { balanceCreate } from '@/lib/api/schemas/balances';
import { now } from '@/lib/clock';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { getBalance, serializeBalance } from '@/lib/billing/balances/balances';
import { createOrGrantBalance } from '@/lib/billing/balances/grants';
import { checkDenomination } from '@/lib/billing/balances/denomination';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/accounts/{account_id}/balance/{denomination} – create (idempotent) and optionally grant units
  POST: withCompany({ body: balanceCreate, optionalBody: true, atomic: true }, async ({ db, company, params, body }) => {
    const account = await getAccount({ db, companyId: company.id, accountId: params.account_id });
    const balance = await createOrGrantBalance({ db, companyId: company.id, accountId: account.id, denomination: params.denomination, amount: body?.amount, reason: body?.reason, now: now() });
    return ok(serializeBalance(balance));
  }),

  // GET /v1/accounts/{account_id}/balance/{denomination}
  GET: withCompany({}, async ({ db, company, params }) => {
    const account = await getAccount({ db, companyId: company.id, accountId: params.account_id });
    return ok(serializeBalance(await getBalance({ db, accountId: account.id, denomination: checkDenomination(params.denomination), now: now() })));
  }),
});
