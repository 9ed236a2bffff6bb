import { declareMethods } from '@/lib/api/route';
import { usageRoute } from '@/lib/api/usage';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/accounts/{account_id}/usage – completed events summed by hour, day or month, grouped by type or a property
  GET: usageRoute('account'),
});
