import { ok, withPublic, declareMethods } from '@/lib/api/route';
import { portalRefillSwitch } from '@/lib/api/schemas/portal';
import { setPortalRefill } from '@/lib/billing/accounts/self-serve';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /portal/{token}/refill – the customer turns the company's threshold refill of a balance on or off (public, link until it expires)
  POST: withPublic({ body: portalRefillSwitch }, async ({ db, params, body }) => {
    const balance = await setPortalRefill({ db, token: params.token, denomination: body.denomination, on: body.on });
    return ok({ denomination: balance.denomination, on: !balance.thresholdRefillOff });
  }),
});
