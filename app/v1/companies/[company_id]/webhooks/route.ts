import { list, ok, withCompany, declareMethods } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { listQuery } from '@/lib/api/pagination';
import { webhookCreate } from '@/lib/api/schemas/webhooks';
import { createWebhook, listWebhooks, serializeWebhook } from '@/lib/billing/webhooks/webhooks';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/companies/{company_id}/webhooks – variant B: register a url with Basic credentials
  POST: withCompany({ body: webhookCreate, atomic: true }, async ({ db, company, params, body }) => {
    const { webhook, topics } = await createWebhook({ db, companyId: ownCompany(company, params.company_id).id, input: body });
    return ok(serializeWebhook(webhook, topics, { secret: true }));
  }),

  // GET /v1/companies/{company_id}/webhooks
  GET: withCompany({ query: listQuery }, async ({ db, company, params, query }) =>
    list(await listWebhooks({ db, companyId: ownCompany(company, params.company_id).id, page: query }), (w) => serializeWebhook(w.webhook, w.topics)),
  ),
});
