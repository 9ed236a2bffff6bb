import { ok, withPublic, methodsNotAllowed } from '@/lib/api/route';
import { cardAttach } from '@/lib/api/schemas/cards';
import { replacePortalCard } from '@/lib/billing/accounts/portal';

// POST /portal/{token}/card – the customer portal replaces the card on file (public, link until it expires)
export const POST = withPublic({ body: cardAttach }, async ({ db, params, body }) => ok(await replacePortalCard({ db, token: params.token, cardToken: body.token })));
export const { GET, PUT, PATCH, DELETE } = methodsNotAllowed('POST');
