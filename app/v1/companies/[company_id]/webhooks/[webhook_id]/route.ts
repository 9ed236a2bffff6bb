import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { webhookUpdate } from '@/lib/api/schemas/webhooks';
import { deleteWebhook, getWebhookWithTopics, serializeWebhook, updateWebhook } from '@/lib/billing/webhooks/webhooks';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/companies/{company_id}/webhooks/{webhook_id}
  GET: withCompany({}, async ({ db, company, params }) => {
    const { webhook, topics } = await getWebhookWithTopics({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id });
    return ok(serializeWebhook(webhook, topics));
  }),

  // PATCH /v1/companies/{company_id}/webhooks/{webhook_id} – url, username, password
  PATCH: withCompany({ body: webhookUpdate, atomic: true }, async ({ db, company, params, body }) => {
    const { webhook, topics } = await updateWebhook({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id, input: body });
    return ok(serializeWebhook(webhook, topics));
  }),

  // DELETE /v1/companies/{company_id}/webhooks/{webhook_id} – waiting deliveries are cancelled
  DELETE: withCompany({ atomic: true }, async ({ db, company, params }) => {
    const { webhook, topics } = await deleteWebhook({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id });
    return ok({ ...serializeWebhook(webhook, topics), deleted: true });
  }),
});
