import { list, ok, withCompany, declareMethods } from '@/lib/api/route';
import { grantCreate, grantListQuery } from '@/lib/api/schemas/grants';
import { now } from '@/lib/clock';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { createGrant, listGrants, serializeGrant, settleDueGrants } from '@/lib/billing/balances/grants';
import { checkDenomination } from '@/lib/billing/balances/denomination';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/accounts/{account_id}/balance/{denomination}/grants – the company gives units as a credit grant
  POST: withCompany({ body: grantCreate, atomic: true }, async ({ db, company, params, body }) => {
    const account = await getAccount({ db, companyId: company.id, accountId: params.account_id });
    const at = now();
    return ok(serializeGrant(await createGrant(db, { companyId: company.id, accountId: account.id, denomination: params.denomination, request: body }, at), at));
  }),

  // GET /v1/accounts/{account_id}/balance/{denomination}/grants – the balance's grants, newest first
  GET: withCompany({ query: grantListQuery }, async ({ db, company, params, query }) => {
    const account = await getAccount({ db, companyId: company.id, accountId: params.account_id });
    const at = now();
    await settleDueGrants(db, { companyId: company.id, accountId: account.id }, at);
    const page = await listGrants(db, { accountId: account.id, denomination: checkDenomination(params.denomination), status: query.status, page: query }, at);
    return list(page, (g) => serializeGrant(g, at));
  }),
});
