import { ok, withCompany, methodsNotAllowed } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { webhookUpdate } from '@/lib/api/schemas/webhooks';
import { deleteWebhook, getWebhookWithTopics, serializeWebhook, updateWebhook } from '@/lib/billing/webhooks/webhooks';

// GET /v1/companies/{company_id}/webhooks/{webhook_id}
export const GET = withCompany({}, async ({ db, company, params }) => {
  const { webhook, topics } = await getWebhookWithTopics({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id });
  return ok(serializeWebhook(webhook, topics));
});

// PATCH /v1/companies/{company_id}/webhooks/{webhook_id} – url, username, password
export const PATCH = withCompany({ body: webhookUpdate, atomic: true }, async ({ db, company, params, body }) => {
  const { webhook, topics } = await updateWebhook({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id, input: body });
  return ok(serializeWebhook(webhook, topics));
});

// DELETE /v1/companies/{company_id}/webhooks/{webhook_id} – waiting deliveries are cancelled
export const DELETE = withCompany({ atomic: true }, async ({ db, company, params }) => {
  const { webhook, topics } = await deleteWebhook({ db, companyId: ownCompany(company, params.company_id).id, webhookId: params.webhook_id });
  return ok({ ...serializeWebhook(webhook, topics), deleted: true });
});
export const { POST, PUT } = methodsNotAllowed('GET', 'PATCH', 'DELETE');
