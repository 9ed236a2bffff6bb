import { ok, withPublic, methodsNotAllowed } from '@/lib/api/route';
import { query, sql } from '@/lib/db/client';

// GET /health – no auth; proves the database answers
export const GET = withPublic({}, async ({ db, dbKind }) => {
  await query(db, sql`select 1`);
  return ok({ status: 'ok', database: dbKind });
});
export const { POST, PUT, PATCH, DELETE } = methodsNotAllowed('GET');
