import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { retryDelivery } from '@/lib/billing/webhooks/deliveries';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST .../webhooks/{webhook_id}/deliveries/{delivery_id}/retry – re-send now; returns the delivery with the new attempt
  POST: withCompany({}, async ({ db, company, params }) =>
    ok(await retryDelivery({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id, deliveryId: params.delivery_id })),
  ),
});
