import { ok, withPublic, declareMethods } from '@/lib/api/route';
import { hostedCardAttach } from '@/lib/api/schemas/cards';
import { replacePortalCard } from '@/lib/billing/accounts/portal';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /portal/{token}/card – the customer portal replaces the card on file (public, link until it expires)
  POST: withPublic({ body: hostedCardAttach }, async ({ db, params, body }) => ok(await replacePortalCard({ db, token: params.token, cardToken: body.token, quote: body.quote }))),
});
