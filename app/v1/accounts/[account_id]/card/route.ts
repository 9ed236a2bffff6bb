import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { cardAttach } from '@/lib/api/schemas/cards';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { attachCard, serializePaymentMethod } from '@/lib/billing/accounts/cards';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/accounts/{account_id}/card – make a card token the account's default payment method
  POST: withCompany({ body: cardAttach }, async ({ db, company, params, body }) => {
    const account = await getAccount({ db, companyId: company.id, accountId: params.account_id });
    return ok(serializePaymentMethod(await attachCard({ db, company, account, token: body.token })));
  }),
});
