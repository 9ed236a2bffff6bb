import { ok, withCompany, methodsNotAllowed } from '@/lib/api/route';
import { getPlan, serializePlan } from '@/lib/billing/plans/plans';

// GET /v1/plans/{plan_id}
export const GET = withCompany({}, async ({ db, company, params }) => ok(serializePlan(await getPlan({ db, companyId: company.id, planId: params.plan_id }))));
export const { POST, PUT, PATCH, DELETE } = methodsNotAllowed('GET');
