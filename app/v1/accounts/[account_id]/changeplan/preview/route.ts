import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { changePlan as changePlanBody } from '@/lib/api/schemas/changeplan';
import { previewPlanChange, serializePlanChangePreview } from '@/lib/billing/plans/change';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/accounts/{account_id}/changeplan/preview – what changeplan with this body would charge now; changes nothing
  POST: withCompany({ body: changePlanBody }, async ({ db, company, params, body }) =>
    ok(serializePlanChangePreview(await previewPlanChange({ db, company, accountId: params.account_id, planId: body.plan_id, chosen: body.plan_variable_amounts }))),
  ),
});
