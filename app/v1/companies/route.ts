import { listAll, ok, withAdmin, withCompany, methodsNotAllowed } from '@/lib/api/route';
import { companyCreate } from '@/lib/api/schemas/companies';
import { createCompany, serializeCompany } from '@/lib/billing/companies/companies';

// GET /v1/companies – the caller's own company, as a one-item list
export const GET = withCompany({}, async ({ company }) => listAll([serializeCompany(company)]));

// POST /v1/companies – the operator registers a company; the API key is shown only here
export const POST = withAdmin({ body: companyCreate, atomic: true }, async ({ db, body }) => {
  const { company, apiKey } = await createCompany({ db, input: body });
  return ok({ ...serializeCompany(company), api_key: apiKey });
});
export const { PUT, PATCH, DELETE } = methodsNotAllowed('GET', 'POST');
