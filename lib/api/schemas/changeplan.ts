import { z } from 'zod';
import { denomination, idOf, units } from './common';

export const changePlan = z.strictObject({
  plan_id: idOf('p'),
  plan_variable_amounts: z.record(denomination, units).optional(),
});
