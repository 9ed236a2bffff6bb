import type { Db } from '../db/client';
import { isTestClock, now } from '../clock';
import { ApiError } from '../errors';
import { advanceTestClock, syncTestClock } from './worker';

function requireTestClock(): void {
  if (!isTestClock()) throw new ApiError('not_found', 'The test clock is off; start the service with BILLING_TEST_CLOCK=1.');
}

export async function testClockNow(db: Db): Promise<Date> {
  requireTestClock();
  await syncTestClock(db);
  return now();
}

export async function advanceBy(db: Db, seconds: number): Promise<Date> {
  requireTestClock();
  return advanceTestClock(db, seconds);
}
