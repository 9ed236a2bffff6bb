import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { getDelivery } from '@/lib/billing/webhooks/deliveries';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/companies/{company_id}/webhooks/{webhook_id}/deliveries/{delivery_id}
  GET: withCompany({}, async ({ db, company, params }) =>
    ok(await getDelivery({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id, deliveryId: params.delivery_id })),
  ),
});
