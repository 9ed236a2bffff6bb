import { list, ok, withCompany, declareMethods } from '@/lib/api/route';
import { listQuery } from '@/lib/api/pagination';
import { typeRegistration } from '@/lib/api/schemas/webhooks';
import { listWebhooks, registerByType, serializeWebhook } from '@/lib/billing/webhooks/webhooks';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/webhooks (also /webhooks) – variant A: register a url for one event type
  POST: withCompany({ body: typeRegistration, atomic: true }, async ({ db, company, body }) => {
    const { webhook, topics } = await registerByType({ db, companyId: company.id, input: body });
    return ok(serializeWebhook(webhook, topics, { secret: true }));
  }),

  // GET /v1/webhooks – the company's webhooks, both styles
  GET: withCompany({ query: listQuery }, async ({ db, company, query }) =>
    list(await listWebhooks({ db, companyId: company.id, page: query }), (w) => serializeWebhook(w.webhook, w.topics)),
  ),
});
