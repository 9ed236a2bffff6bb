import { list, withCompany, declareMethods } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { deliveryListQuery } from '@/lib/api/schemas/webhooks';
import { listDeliveries } from '@/lib/billing/webhooks/deliveries';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/companies/{company_id}/webhooks/{webhook_id}/deliveries – newest first, every attempt logged
  GET: withCompany({ query: deliveryListQuery }, async ({ db, company, params, query }) =>
    list(await listDeliveries({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id, page: query }), (d) => d.view),
  ),
});
