import { listAll, withCompany, methodsNotAllowed } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { listSubscriptions } from '@/lib/billing/webhooks/webhooks';

// GET /v1/companies/{company_id}/webhooks/{webhook_id}/subscriptions – its topics (at most seven, unpaged)
export const GET = withCompany({}, async ({ db, company, params }) =>
  listAll(await listSubscriptions({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id })),
);
export const { POST, PUT, PATCH, DELETE } = methodsNotAllowed('GET');
