import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { eventCreate } from '@/lib/api/schemas/events';
import { now } from '@/lib/clock';
import { serializeBalance } from '@/lib/billing/balances/balances';
import { recordEvent, serializeEvent } from '@/lib/billing/events/events';
import { countEvent } from '@/lib/metrics/events';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/accounts/{account_id}/events – one event, gated or not; answers with the resulting balance
  POST: withCompany({ body: eventCreate, atomic: true }, async ({ db, company, params, body, idempotencyKey }) => {
    const at = now();
    // Without an Idempotency-Key the handler runs outside any transaction of the request's own,
    // so concurrent events on one account may be written together (group commit).
    const group = !idempotencyKey;
    const { event, balance } = await countEvent(recordEvent({ db, companyId: company.id, accountId: params.account_id, input: body, now: at, group }));
    return ok({ ...serializeEvent(event, at), balance: balance && serializeBalance(balance) });
  }),
});
