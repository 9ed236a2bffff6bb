import { declareMethods } from '@/lib/api/route';
import * as autoRefill from '../auto_refill/route';

// The `autorefill` spelling of .../auto_refill.
export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({ PUT: autoRefill.PUT, DELETE: autoRefill.DELETE });
