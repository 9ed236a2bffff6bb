import { declareMethods } from '@/lib/api/route';
import { probeRoute, readiness } from '@/lib/probes';

// GET /health – the readiness probe under its older name (same answer as /readyz).
export const dynamic = 'force-dynamic';
export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  GET: probeRoute(readiness),
});
