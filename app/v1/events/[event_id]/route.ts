import { ok, withCompany, declareMethods } from '@/lib/api/route';
import { eventTransition } from '@/lib/api/schemas/events';
import { now } from '@/lib/clock';
import { getEvent, serializeEvent, transitionEvent } from '@/lib/billing/events/events';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/events/{event_id}
  GET: withCompany({}, async ({ db, company, params }) =>
    ok(serializeEvent(await getEvent({ db, companyId: company.id, eventId: params.event_id }), now())),
  ),

  // PUT /v1/events/{event_id} – complete (at an actual) or cancel a pending event, or extend its hold
  PUT: withCompany({ body: eventTransition, atomic: true }, async ({ db, company, params, body }) => {
    const at = now();
    const event = await transitionEvent({ db, companyId: company.id, eventId: params.event_id, change: body, now: at });
    return ok(serializeEvent(event, at));
  }),
});
