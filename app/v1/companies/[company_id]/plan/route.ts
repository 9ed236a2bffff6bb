import { declareMethods } from '@/lib/api/route';
import * as plans from '../plans/route';

// POST /companies/{company_id}/plan, the interface's own path for creating a plan.
export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({ POST: plans.POST });
