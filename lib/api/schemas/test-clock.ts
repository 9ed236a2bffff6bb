import { z } from 'zod';

export const advance = z.strictObject({
  seconds: z.number({ error: 'seconds must be a number' }).int('seconds must be a whole number').min(0, 'seconds must not be negative').max(10 * 366 * 86400),
});
