import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { eventCreate } from '@/lib/api/schemas/events';
import { now } from '@/lib/clock';
import { checkEvent, serializeCheck } from '@/lib/billing/events/check';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/accounts/{account_id}/check – would this event pass now? Records nothing.
  POST: withCompany({ body: eventCreate }, async ({ db, company, params, body }) => ok(serializeCheck(await checkEvent({ db, companyId: company.id, accountId: params.account_id, input: body, now: now() })))),
});
