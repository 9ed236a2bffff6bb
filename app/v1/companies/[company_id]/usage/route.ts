import { declareMethods } from '@/lib/api/route';
import { usageRoute } from '@/lib/api/usage';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/companies/{company_id}/usage – the same over the company's accounts, or one of them (account_id)
  GET: usageRoute('company'),
});
