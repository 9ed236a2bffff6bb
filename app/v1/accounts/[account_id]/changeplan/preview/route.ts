import { ok, withCompany, methodsNotAllowed } from '@/lib/api/route';
import { changePlan as changePlanBody } from '@/lib/api/schemas/changeplan';
import { previewPlanChange, serializePlanChangePreview } from '@/lib/billing/plans/change';

// POST /v1/accounts/{account_id}/changeplan/preview – what changeplan with this body would charge now; changes nothing
export const POST = withCompany({ body: changePlanBody }, async ({ db, company, params, body }) =>
  ok(serializePlanChangePreview(await previewPlanChange({ db, company, accountId: params.account_id, planId: body.plan_id, chosen: body.plan_variable_amounts }))),
);
export const { GET, PUT, PATCH, DELETE } = methodsNotAllowed('POST');
