import { methodsNotAllowed } from '@/lib/api/route';
// The `autorefill` spelling of .../auto_refill.
export { PUT, DELETE } from '../auto_refill/route';
export const { GET, POST, PATCH } = methodsNotAllowed('PUT', 'DELETE');
