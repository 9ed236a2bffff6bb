// POST /companies/{company_id}/plan, the interface's own path for creating a plan.
export { POST } from '../plans/route';
