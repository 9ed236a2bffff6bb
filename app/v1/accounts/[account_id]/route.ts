import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { accountUpdate } from '@/lib/api/schemas/accounts';
import { getAccount, serializeAccount, updateAccount } from '@/lib/billing/accounts/accounts';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/accounts/{account_id}
  GET: withCompany({}, async ({ db, company, params }) =>
    ok(serializeAccount(await getAccount({ db, companyId: company.id, accountId: params.account_id }))),
  ),

  // PATCH /v1/accounts/{account_id} – name, email, metadata, billing address, external id
  PATCH: withCompany({ body: accountUpdate, atomic: true }, async ({ db, company, params, body }) =>
    ok(serializeAccount(await updateAccount({ db, companyId: company.id, accountId: params.account_id, input: body }))),
  ),
});
