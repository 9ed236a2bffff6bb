import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { subscribe, unsubscribe } from '@/lib/billing/webhooks/webhooks';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/companies/{company_id}/webhooks/{webhook_id}/subscribe/{topic} – idempotent
  POST: withCompany({ atomic: true }, async ({ db, company, params }) =>
    ok(await subscribe({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id, topic: params.topic })),
  ),

  // DELETE same path – unsubscribe
  DELETE: withCompany({ atomic: true }, async ({ db, company, params }) =>
    ok(await unsubscribe({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id, topic: params.topic })),
  ),
});
