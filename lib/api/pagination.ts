import { z } from 'zod';

export const listQuery = z.strictObject({
  limit: z.coerce
    .number({ error: 'limit must be an integer between 1 and 1000' })
    .int('limit must be an integer between 1 and 1000')
    .min(1, 'limit must be at least 1')
    .max(1000, 'limit must be at most 1000')
    .default(100),
  starting_after: z.string().min(1).optional(),
});
export type ListQuery = z.infer<typeof listQuery>;
