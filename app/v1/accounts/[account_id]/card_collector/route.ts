import { ok, withCompany, methodsNotAllowed } from '@/lib/api/route';
import { now } from '@/lib/clock';
import { getAccount } from '@/lib/billing/accounts/accounts';
import { createCollectorLink } from '@/lib/billing/accounts/collector';

// POST /v1/accounts/{account_id}/card_collector – a fresh one-time card collector link
export const POST = withCompany({ atomic: true }, async ({ db, company, params }) => {
  const account = await getAccount({ db, companyId: company.id, accountId: params.account_id });
  return ok({ account_id: account.id, card_collector_url: await createCollectorLink({ db, accountId: account.id, now: now() }) });
});
export const { GET, PUT, PATCH, DELETE } = methodsNotAllowed('POST');
