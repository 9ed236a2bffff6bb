import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { forgetCachedKeys } from '@/lib/api/credentials';
import { companyUpdate } from '@/lib/api/schemas/portal';
import { serializeCompany, updateCompany } from '@/lib/billing/companies/companies';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // PATCH /v1/companies/{company_id} – the company's own settings: the customer portal's top-up packages
  PATCH: withCompany({ body: companyUpdate, atomic: true }, async ({ db, company, params, body }) => {
    const updated = await updateCompany({ db, companyId: ownCompany(company, params.company_id).id, input: body });
    // Authentication keeps the company a few seconds: this process reads the new settings at once.
    forgetCachedKeys();
    return ok(serializeCompany(updated));
  }),
});
