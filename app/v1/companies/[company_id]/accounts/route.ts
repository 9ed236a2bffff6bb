import { list, ok, withCompany, declareMethods } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { accountCreate, accountListQuery } from '@/lib/api/schemas/accounts';
import { createAccount, listAccounts, serializeAccount } from '@/lib/billing/accounts/accounts';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/companies/{company_id}/accounts – create an account (processor customer, card, plan, collector link)
  POST: withCompany({ body: accountCreate }, async ({ db, company, params, body, idempotencyKey }) => {
    const { account, cardCollectorUrl } = await createAccount({ db, company: ownCompany(company, params.company_id), input: body, idempotencyKey });
    return ok(serializeAccount(account, cardCollectorUrl ? { card_collector_url: cardCollectorUrl } : {}));
  }),

  // GET /v1/companies/{company_id}/accounts – newest first
  GET: withCompany({ query: accountListQuery }, async ({ db, company, params, query }) =>
    list(await listAccounts({ db, companyId: ownCompany(company, params.company_id).id, page: query }), (a) => serializeAccount(a)),
  ),
});
