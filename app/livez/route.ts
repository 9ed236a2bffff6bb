import { declareMethods } from '@/lib/api/route';
import { liveness, probeRoute } from '@/lib/probes';

// GET /livez – no auth, no database: the process runs and its event loop answers.
export const dynamic = 'force-dynamic';
export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  GET: probeRoute(liveness),
});
