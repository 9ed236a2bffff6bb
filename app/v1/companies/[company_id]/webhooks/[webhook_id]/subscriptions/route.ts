import { pageOf, withCompany, declareMethods } from '@/lib/api/route';
import { listQuery } from '@/lib/api/pagination';
import { ownCompany } from '@/lib/api/company';
import { listSubscriptions } from '@/lib/billing/webhooks/webhooks';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/companies/{company_id}/webhooks/{webhook_id}/subscriptions – its topics (at most seven), paged by topic
  GET: withCompany({ query: listQuery }, async ({ db, company, params, query }) =>
    pageOf(await listSubscriptions({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id }), query, (s) => s.topic),
  ),
});
