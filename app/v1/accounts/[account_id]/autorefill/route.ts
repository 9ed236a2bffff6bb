import { methodsNotAllowed } from '@/lib/api/route';
// The `autorefill` spelling of /v1/accounts/{account_id}/auto_refill.
export { PUT } from '../auto_refill/route';
export const { GET, POST, PATCH, DELETE } = methodsNotAllowed('PUT');
