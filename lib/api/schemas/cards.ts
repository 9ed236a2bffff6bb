import { z } from 'zod';

export const cardAttach = z.strictObject({ token: z.string({ error: 'must be a string' }).trim().min(1, 'must not be empty').max(255) });
