import { ok, withCompany, methodsNotAllowed } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { subscribe, unsubscribe } from '@/lib/billing/webhooks/webhooks';

// POST /v1/companies/{company_id}/webhooks/{webhook_id}/subscribe/{topic} – idempotent
export const POST = withCompany({ atomic: true }, async ({ db, company, params }) =>
  ok(await subscribe({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id, topic: params.topic })),
);

// DELETE same path – unsubscribe
export const DELETE = withCompany({ atomic: true }, async ({ db, company, params }) =>
  ok(await unsubscribe({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id, topic: params.topic })),
);
export const { GET, PUT, PATCH } = methodsNotAllowed('POST', 'DELETE');
