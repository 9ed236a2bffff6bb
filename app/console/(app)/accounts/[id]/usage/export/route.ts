import { declareMethods } from '@/lib/api/route';
import { requireUser } from '@/lib/console/next-auth';
import { now } from '@/lib/clock';
import { getReadDb } from '@/lib/db/replica';
import { ApiError } from '@/lib/errors';
import { accountUsageByDay, usageCsv } from '@/lib/console/usage';

// GET /console/accounts/{id}/usage/export – the usage chart's 30 days as CSV (day, type, denomination, events, cost, quantities)
export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  GET: async (_request: Request, { params }: { params: Promise<{ id: string }> }): Promise<Response> => {
    const user = await requireUser();
    const { id } = await params;
    const at = now();
    try {
      const { rows } = await accountUsageByDay({ db: await getReadDb(), companyId: user.companyId, accountId: id, now: at });
      return new Response(usageCsv(rows), {
        headers: { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="usage-${id}-${at.toISOString().slice(0, 10)}.csv"`, 'cache-control': 'no-store' },
      });
    } catch (err) {
      if (err instanceof ApiError && err.type === 'not_found') return new Response('No such account.\n', { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' } });
      throw err;
    }
  },
});
