import { ok, pageOf, withAdmin, withCompany, declareMethods } from '@/lib/api/route';
import { listQuery } from '@/lib/api/pagination';
import { companyCreate } from '@/lib/api/schemas/companies';
import { createCompany, hashOwnerPassword, serializeCompany } from '@/lib/billing/companies/companies';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/companies – the caller's own company, as a one-item list
  GET: withCompany({ query: listQuery }, async ({ company, query }) => pageOf([serializeCompany(company)], query, (c) => c.id)),

  // POST /v1/companies – the operator registers a company; the API key is shown only here.
  // The owner's password is hashed (about a second) before the request's transaction opens.
  POST: withAdmin({ body: companyCreate, atomic: true, prepare: hashOwnerPassword }, async ({ db, body, prepared }) => {
    const { company, apiKey } = await createCompany({ db, input: body, passwordHash: prepared });
    return ok({ ...serializeCompany(company), api_key: apiKey });
  }),
});
