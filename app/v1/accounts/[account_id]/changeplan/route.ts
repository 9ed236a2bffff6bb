import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { changePlan as changePlanBody } from '@/lib/api/schemas/changeplan';
import { serializeAccount } from '@/lib/billing/accounts/accounts';
import { changePlan } from '@/lib/billing/plans/change';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/accounts/{account_id}/changeplan – upgrade now (prorated) or schedule a downgrade
  POST: withCompany({ body: changePlanBody }, async ({ db, company, params, body, idempotencyKey }) =>
    ok(serializeAccount(await changePlan({ db, company, accountId: params.account_id, planId: body.plan_id, chosen: body.plan_variable_amounts, idempotencyKey }))),
  ),
});
