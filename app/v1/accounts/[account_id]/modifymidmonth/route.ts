import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { modifyMidMonth } from '@/lib/api/schemas/refills';
import { invalid } from '@/lib/errors';
import { now } from '@/lib/clock';
import { serializeBalance } from '@/lib/billing/balances/balances';
import { modifyMidMonth as modify } from '@/lib/billing/refills/refills';

// POST or PUT /v1/accounts/{account_id}/modifymidmonth – increase a monthly refill at once, prorated
const handler = withCompany({ body: modifyMidMonth }, async ({ db, company, params, body, idempotencyKey }) => {
  if (body.account_id && body.account_id !== params.account_id) throw invalid('account_id in the body differs from the path.', 'account_id');
  const r = await modify({ db, company, accountId: params.account_id, input: body, now: now(), idempotencyKey });
  return ok({ ...serializeBalance(r.balance), credit: r.credit, charged: r.charged });
});
export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({ POST: handler, PUT: handler });
