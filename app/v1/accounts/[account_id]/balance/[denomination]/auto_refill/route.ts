import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { autoRefill } from '@/lib/api/schemas/refills';
import { now } from '@/lib/clock';
import { serializeBalance } from '@/lib/billing/balances/balances';
import { removeAutoRefill, setAutoRefill } from '@/lib/billing/refills/refills';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // PUT /v1/accounts/{account_id}/balance/{denomination}/auto_refill (also .../autorefill) – monthly or threshold refill
  PUT: withCompany({ body: autoRefill }, async ({ db, company, params, body, idempotencyKey }) =>
    ok(serializeBalance((await setAutoRefill({ db, company, accountId: params.account_id, denomination: params.denomination, config: body, now: now(), idempotencyKey })).balance)),
  ),

  // DELETE – turn refills off for this balance
  DELETE: withCompany({ atomic: true }, async ({ db, company, params }) =>
    ok(serializeBalance(await removeAutoRefill({ db, company, accountId: params.account_id, denomination: params.denomination, now: now() }))),
  ),
});
