import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { scheduledRefill } from '@/lib/api/schemas/refills';
import { now } from '@/lib/clock';
import { scheduleRefillChange } from '@/lib/billing/refills/refills';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // PUT /v1/accounts/{account_id}/auto_refill – schedule a refill change for the next monthly refill (the balance path's fields)
  PUT: withCompany({ body: scheduledRefill, atomic: true }, async ({ db, company, params, body }) =>
    ok(await scheduleRefillChange({ db, company, accountId: params.account_id, input: body, now: now() })),
  ),
});
