import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { invalid } from '@/lib/errors';
import { reportWindow } from '@/lib/api/schemas/grants';
import { now } from '@/lib/clock';
import { creditsReport } from '@/lib/billing/balances/credits-report';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/companies/{company_id}/reports/credits – granted, spent, expired and voided credit per denomination
  GET: withCompany({ query: reportWindow }, async ({ db, company, params, query }) => {
    const own = ownCompany(company, params.company_id);
    // By default the window ends just after now, so what was written at this very instant counts.
    const to = query.to ?? new Date(now().getTime() + 1);
    const from = query.from ?? new Date(to.getTime() - 30 * 86_400_000);
    if (from.getTime() > to.getTime()) throw invalid('from must not be after to.', 'from');
    if (to.getTime() - from.getTime() > 400 * 86_400_000) throw invalid('A window is at most 400 days.', 'to');
    return ok(await creditsReport(db, own.id, from, to));
  }),
});
