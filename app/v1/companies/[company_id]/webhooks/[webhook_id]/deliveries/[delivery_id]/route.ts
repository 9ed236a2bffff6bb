import { ok, withCompany, methodsNotAllowed } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { getDelivery } from '@/lib/billing/webhooks/delivery';

// GET /v1/companies/{company_id}/webhooks/{webhook_id}/deliveries/{delivery_id}
export const GET = withCompany({}, async ({ db, company, params }) =>
  ok(await getDelivery({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id, deliveryId: params.delivery_id })),
);
export const { POST, PUT, PATCH, DELETE } = methodsNotAllowed('GET');
