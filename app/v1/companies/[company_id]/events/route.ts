import { list, withCompany, declareMethods } from '@/lib/api/route';
import { ownCompany } from '@/lib/api/company';
import { eventListQuery } from '@/lib/api/schemas/events';
import { now } from '@/lib/clock';
import { listEvents, serializeEvent } from '@/lib/billing/events/events';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/companies/{company_id}/events – filters: account_id, type, state (incl. rejected), created_gte, created_lt
  // Usage history: served by the read replica when one is set (it may lag a little).
  GET: withCompany({ query: eventListQuery, replica: true }, async ({ db, company, params, query }) => {
    const at = now();
    return list(await listEvents({ db, companyId: ownCompany(company, params.company_id).id, q: query, now: at }), (e) => serializeEvent(e, at));
  }),
});
