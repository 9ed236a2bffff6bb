import { methodsNotAllowed } from '@/lib/api/route';
// POST /companies/{company_id}/plan, the interface's own path for creating a plan.
export { POST } from '../plans/route';
export const { GET, PUT, PATCH, DELETE } = methodsNotAllowed('POST');
