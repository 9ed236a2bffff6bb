import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { deposit } from '@/lib/api/schemas/balances';
import { serializeBalance } from '@/lib/billing/balances/balances';
import { depositUnits } from '@/lib/billing/accounts/deposit';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/accounts/{account_id}/deposit – charge the card first (if amount_to_charge > 0), then grant units
  // A free deposit only writes; one that charges calls the processor, and its charge row keeps
  // a retry from paying twice.
  POST: withCompany({ body: deposit, atomic: (body) => body.charge === 0 }, async ({ db, company, params, body, idempotencyKey }) =>
    ok(serializeBalance(await depositUnits({ db, company, accountId: params.account_id, input: body, idempotencyKey }))),
  ),
});
