import { ok, withAdmin, declareMethods } from '@/lib/api/route';
import { advance } from '@/lib/api/schemas/test-clock';
import { advanceBy } from '@/lib/jobs/test-clock';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // POST /v1/test_clock/advance – move the clock and run all work due by then
  POST: withAdmin({ body: advance }, async ({ db, body }) => ok({ now: (await advanceBy(db, body.seconds)).toISOString() })),
});
