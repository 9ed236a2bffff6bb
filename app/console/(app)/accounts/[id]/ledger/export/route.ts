import { declareMethods } from '@/lib/api/route';
import { requireUser } from '@/lib/auth';
import { now } from '@/lib/clock';
import { getReadDb } from '@/lib/db/replica';
import { exportLedger } from '@/lib/console/exports';

// GET /console/accounts/{id}/ledger/export – the account's ledger as CSV, streamed page by page
export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  GET: async (request: Request, { params }: { params: Promise<{ id: string }> }): Promise<Response> => {
    const user = await requireUser();
    const { id } = await params;
    return exportLedger({ db: await getReadDb(), companyId: user.companyId, accountId: id, params: new URL(request.url).searchParams, now: now() });
  },
});
