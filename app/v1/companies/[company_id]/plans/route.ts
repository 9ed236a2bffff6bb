import { list, ok, withCompany, declareMethods } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { listQuery } from '@/lib/api/pagination';
import { planCreate } from '@/lib/api/schemas/plans';
import { createPlan, listPlans, serializePlan } from '@/lib/billing/catalog/plans';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/companies/{company_id}/plans (also .../plan) – create a plan
  POST: withCompany({ body: planCreate, atomic: true }, async ({ db, company, params, body }) =>
    ok(serializePlan(await createPlan({ db, companyId: ownCompany(company, params.company_id).id, input: body }))),
  ),

  // GET /v1/companies/{company_id}/plans
  GET: withCompany({ query: listQuery }, async ({ db, company, params, query }) =>
    list(await listPlans({ db, companyId: ownCompany(company, params.company_id).id, page: query }), serializePlan),
  ),
});
