import { list, withCompany, declareMethods } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { listQuery } from '@/lib/api/pagination';
import { listAttempts } from '@/lib/billing/webhooks/deliveries';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/companies/{company_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/attempts – the attempt log, newest first
  GET: withCompany({ query: listQuery }, async ({ db, company, params, query }) =>
    list(await listAttempts({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id, deliveryId: params.delivery_id, page: query }), (a) => a.view),
  ),
});
