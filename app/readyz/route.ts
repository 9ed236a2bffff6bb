import { declareMethods } from '@/lib/api/route';
import { probeRoute, readiness } from '@/lib/probes';

// GET /readyz – no auth; 200 when the database answers with every migration applied, 503
// otherwise and from the moment the process starts shutting down.
export const dynamic = 'force-dynamic';
export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  GET: probeRoute(readiness),
});
