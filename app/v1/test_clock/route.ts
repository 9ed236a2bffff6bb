import { ok, withAdmin, declareMethods } from '@/lib/api/route';
import { testClockNow } from '@/lib/jobs/test-clock';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/test_clock – only with BILLING_TEST_CLOCK=1 (operator token)
  GET: withAdmin({}, async ({ db }) => ok({ now: (await testClockNow(db)).toISOString() })),
});
