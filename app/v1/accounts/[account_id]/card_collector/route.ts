import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { now } from '@/lib/clock';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { createCollectorLink } from '@/lib/billing/accounts/collector';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/accounts/{account_id}/card_collector – a fresh one-time card collector link
  POST: withCompany({ atomic: true }, async ({ db, company, params }) => {
    const account = await getAccount({ db, companyId: company.id, accountId: params.account_id });
    return ok({ account_id: account.id, card_collector_url: await createCollectorLink({ db, accountId: account.id, now: now() }) });
  }),
});
