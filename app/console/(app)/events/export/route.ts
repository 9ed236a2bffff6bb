import { declareMethods } from '@/lib/api/route';
import { requireUser } from '@/lib/auth';
import { now } from '@/lib/clock';
import { getReadDb } from '@/lib/db/replica';
import { exportEvents } from '@/lib/console/exports';

// GET /console/events/export – the explorer's filtered events as CSV, streamed page by page
export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  GET: async (request: Request): Promise<Response> => {
    const user = await requireUser();
    return exportEvents({ db: await getReadDb(), companyId: user.companyId, params: new URL(request.url).searchParams, now: now() });
  },
});
