import { declareMethods } from '@/lib/api/route';
import { answerMetrics } from '@/lib/metrics/endpoint';
import { observed } from '@/lib/metrics/requests';

// GET /metrics – Prometheus text format behind Authorization: Bearer <METRICS_TOKEN>; 404 while
// METRICS_TOKEN is unset. Not part of the API reference: it is for the monitoring system.
export const dynamic = 'force-dynamic';
export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  GET: observed(
    false,
    async (req: Request) => {
      const a = await answerMetrics(req.headers.get('authorization'));
      return new Response(a.body, { status: a.status, headers: a.headers });
    },
    true,
  ),
});
