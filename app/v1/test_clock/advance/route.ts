import { ok, withAdmin, methodsNotAllowed } from '@/lib/api/route';
import { advance } from '@/lib/api/schemas/test-clock';
import { advanceBy } from '@/lib/jobs/test-clock';

// POST /v1/test_clock/advance – move the clock and run all work due by then
export const POST = withAdmin({ body: advance }, async ({ db, body }) => ok({ now: (await advanceBy(db, body.seconds)).toISOString() }));
export const { GET, PUT, PATCH, DELETE } = methodsNotAllowed('POST');
