import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { getPlan, serializePlan } from '@/lib/billing/catalog/plans';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/plans/{plan_id}
  GET: withCompany({}, async ({ db, company, params }) => ok(serializePlan(await getPlan({ db, companyId: company.id, planId: params.plan_id })))),
});
