import { ok, withAdmin, methodsNotAllowed } from '@/lib/api/route';
import { testClockNow } from '@/lib/jobs/test-clock';

// GET /v1/test_clock – only with BILLING_TEST_CLOCK=1 (operator token)
export const GET = withAdmin({}, async ({ db }) => ok({ now: (await testClockNow(db)).toISOString() }));
export const { POST, PUT, PATCH, DELETE } = methodsNotAllowed('GET');
