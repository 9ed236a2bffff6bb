import { ok, withCompany, methodsNotAllowed } from '@/lib/api/route';
import { accountUpdate } from '@/lib/api/schemas/accounts';
import { getAccount, serializeAccount, updateAccount } from '@/lib/billing/accounts/accounts';

// GET /v1/accounts/{account_id}
export const GET = withCompany({}, async ({ db, company, params }) =>
  ok(serializeAccount(await getAccount({ db, companyId: company.id, accountId: params.account_id }))),
);

// PATCH /v1/accounts/{account_id} – name, email, metadata, billing address, external id
export const PATCH = withCompany({ body: accountUpdate, atomic: true }, async ({ db, company, params, body }) =>
  ok(serializeAccount(await updateAccount({ db, companyId: company.id, accountId: params.account_id, input: body }))),
);
export const { POST, PUT, DELETE } = methodsNotAllowed('GET', 'PATCH');
