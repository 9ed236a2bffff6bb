import { listAll, withCompany, declareMethods } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { listSubscriptions } from '@/lib/billing/webhooks/webhooks';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/companies/{company_id}/webhooks/{webhook_id}/subscriptions – its topics (at most seven, unpaged)
  GET: withCompany({}, async ({ db, company, params }) =>
    listAll(await listSubscriptions({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id })),
  ),
});
