import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { spendLimitsPut } from '@/lib/api/schemas/spend-limits';
import { now } from '@/lib/clock';
import { getSpendLimits, serializeSpendLimit, setSpendLimits } from '@/lib/billing/balances/spend-limits';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/accounts/{account_id}/spend_limits – the account's spend limits, each with its period's spend so far
  // (A list never paged: an account has at most 100 limits.)
  GET: withCompany({}, async ({ db, company, params }) => ({ data: (await getSpendLimits({ db, companyId: company.id, accountId: params.account_id, now: now() })).map(serializeSpendLimit), hasMore: false })),
  // PUT /v1/accounts/{account_id}/spend_limits – replace the account's spend limits ([] clears them)
  PUT: withCompany({ body: spendLimitsPut }, async ({ db, company, params, body }) =>
    ok((await setSpendLimits({ db, companyId: company.id, accountId: params.account_id, limits: body, now: now() })).map(serializeSpendLimit)),
  ),
});
