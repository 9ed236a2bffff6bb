import { ok, withPublic, declareMethods } from '@/lib/api/route';
import { portalTopupPurchase } from '@/lib/api/schemas/portal';
import { buyPortalTopup } from '@/lib/billing/accounts/self-serve';
import { unitsOut } from '@/lib/money';
import { formatCents, formatUnits } from '@/lib/console/format';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /portal/{token}/topup – the customer buys one of the company's top-up packages with the card on file (public, link until it expires)
  POST: withPublic({ body: portalTopupPurchase }, async ({ db, params, body }) => {
    const balance = await buyPortalTopup({ db, token: params.token, input: body });
    return ok({
      denomination: balance.denomination,
      amount: unitsOut(balance.amount),
      message: `Paid ${formatCents(body.amount_to_charge)} with your card: ${formatUnits(body.amount_to_deposit)} ${body.denomination} added.`,
    });
  }),
});
