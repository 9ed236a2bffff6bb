import { ok, withPublic, declareMethods } from '@/lib/api/route';
import { hostedCardAttach } from '@/lib/api/schemas/cards';
import { completeCollector } from '@/lib/billing/accounts/collector';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /collect/{token}/submit – the hosted collector page attaches the card (public, one-time link)
  POST: withPublic({ body: hostedCardAttach }, async ({ db, params, body }) => {
    const account = await completeCollector({ db, token: params.token, cardToken: body.token, quote: body.quote });
    return ok({ plan_status: account.planStatus, payment_method: account.paymentMethod && { brand: account.paymentMethod.brand, last4: account.paymentMethod.last4 } });
  }),
});
