import { ApiError } from '../errors';
import { metrics } from './registry';

/**
 * Counts events where the event routes answer: recorded, or refused for want of balance (the
 * 402 of a gated event; in a batch, the items that come back rejected).
 */
export async function countEvent<T>(work: Promise<T>): Promise<T> {
  try {
    const result = await work;
    metrics().events.inc({ call: 'single', outcome: 'recorded' });
    return result;
  } catch (err) {
    if (err instanceof ApiError && err.type === 'insufficient_balance') metrics().events.inc({ call: 'single', outcome: 'refused' });
    throw err;
  }
}

export function countBatch<T extends { state: string }>(recorded: T[]): T[] {
  const m = metrics();
  const refused = recorded.filter((e) => e.state === 'rejected').length;
  m.batchSize.observe(recorded.length);
  if (recorded.length > refused) m.events.inc({ call: 'batch', outcome: 'recorded' }, recorded.length - refused);
  if (refused) m.events.inc({ call: 'batch', outcome: 'refused' }, refused);
  return recorded;
}
