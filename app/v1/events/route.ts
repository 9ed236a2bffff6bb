import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { eventBatch } from '@/lib/api/schemas/events';
import { now } from '@/lib/clock';
import { recordEvents, serializeEvent } from '@/lib/billing/events/events';
import { countBatch } from '@/lib/metrics/events';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/events – a batch of up to 1000 events, one transaction; gated items may come back rejected
  POST: withCompany({ body: eventBatch, maxItems: 1000, atomic: true }, async ({ db, company, body }) => {
    const at = now();
    return ok(countBatch(await recordEvents({ db, companyId: company.id, items: body, now: at })).map((e) => serializeEvent(e, at)));
  }),
});
