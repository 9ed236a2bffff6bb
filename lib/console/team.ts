import { z } from 'zod';
import { and, asc, eq, sql } from 'drizzle-orm';
import { isUniqueViolation, type Db } from '../db/client';
import { admins } from '../db/schema';
import { hashingBusy, hashPassword, verifyPassword } from '../crypto';
import { newId } from '../ids';
import { now } from '../clock';
import { ApiError, conflict, invalid, notFound } from '../errors';
import { email } from '../api/schemas/common';
import { companyCreate } from '../api/schemas/companies';
import { attemptSignIn } from './sign-in';
import { spendActionBudget } from './action-budgets';

/** The same password rule as the owner's password at registration (`POST /v1/companies`). */
const password = companyCreate.shape.password.unwrap();

export const adminInvite = z.strictObject({ email, password });
export type AdminInvite = z.infer<typeof adminInvite>;

export const passwordChange = z.strictObject({ current_password: z.string().min(1, 'must not be empty'), new_password: password });

export type Admin = typeof admins.$inferSelect;

export async function listAdmins({ db, companyId }: { db: Db; companyId: string }) {
  return db
    .select({ id: admins.id, email: admins.email, role: admins.role, createdAt: admins.createdAt })
    .from(admins)
    .where(eq(admins.companyId, companyId))
    .orderBy(asc(admins.createdAt), asc(admins.id));
}

/**
 * The owner adds an admin with a password the owner chose (and passes on); the new admin can
 * sign in at once and change it. Emails are unique across all companies (sign-in is by email).
 * At most ACTION_BUDGETS.invite tries per company in 15 minutes: each hashes a password. The
 * hash is made before the email is checked, so an email in use answers no sooner than a free one,
 * and an email in use by another company's admin is answered as neutrally as it can be: the
 * owner learns it cannot be used here, never that, or where, it is in use.
 */
export async function inviteAdmin({ db, companyId, inviterRole, input }: { db: Db; companyId: string; inviterRole: string; input: AdminInvite }) {
  if (inviterRole !== 'owner') throw new ApiError('unauthorized', 'Only the owner of the company can invite admins.');
  await spendActionBudget(db, 'invite', companyId);
  const passwordHash = await hashPassword(input.password);
  try {
    const [admin] = await db
      .insert(admins)
      .values({ id: newId('u'), companyId, email: input.email, passwordHash, role: 'admin', createdAt: now() })
      .returning({ id: admins.id, email: admins.email, role: admins.role, createdAt: admins.createdAt });
    return admin;
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    // The team list shows the company's own admins: saying so tells the owner nothing new.
    const [own] = await db.select({ id: admins.id }).from(admins).where(and(eq(admins.companyId, companyId), eq(sql`lower(${admins.email})`, input.email.trim().toLowerCase())));
    if (own) throw conflict('This email is already an admin of your company.', 'email');
    throw conflict('This email cannot be used for an admin here. Ask them for another address.', 'email');
  }
}

/**
 * Changes the signed-in admin's own password and raises their session version, so every
 * session of theirs (this one included) ends: they sign in again with the new password. At most
 * ACTION_BUDGETS.password_change tries per admin in 15 minutes (each hashes twice).
 */
export async function changePassword({ db, companyId, adminId, input, address = null }: { db: Db; companyId: string; adminId: string; input: z.infer<typeof passwordChange>; address?: string | null }) {
  const [admin] = await db.select().from(admins).where(and(eq(admins.id, adminId), eq(admins.companyId, companyId)));
  const wrong = () => invalid('That is not your current password.', 'current_password');
  if (!admin) {
    // An unknown admin id costs the same check as a wrong password.
    await verifyPassword(input.current_password, null);
    throw wrong();
  }
  await spendActionBudget(db, 'password_change', admin.id);
  // Checked as a sign-in of this email from this address, and counted with them: whoever holds a
  // session cannot guess the current password faster than at the sign-in form. The hash is left
  // as it is, so the change below applies only over the hash just checked.
  const check = await attemptSignIn({ db, email: admin.email, password: input.current_password, address, rehash: false });
  if (check.status === 'locked') throw invalid('Too many wrong passwords for this email: password changes and sign-in are paused for 15 minutes.', 'current_password');
  if (check.status === 'busy') throw hashingBusy();
  if (check.status !== 'ok' || check.admin.id !== admin.id) throw wrong();
  const passwordHash = await hashPassword(input.new_password);
  // Only over the hash just checked: two changes at once cannot both pass with the same old password.
  const [changed] = await db
    .update(admins)
    .set({ passwordHash, sessionVersion: sql`${admins.sessionVersion} + 1` })
    .where(and(eq(admins.id, admin.id), eq(admins.passwordHash, admin.passwordHash)))
    .returning({ id: admins.id });
  if (!changed) throw invalid('Your password was changed meanwhile: sign in again.', 'current_password');
}

/**
 * The owner removes an admin: the admin's sessions end at their next request. The company
 * always keeps an owner, so the last one cannot be removed (nor remove themselves).
 */
export async function removeAdmin({ db, companyId, actor, adminId }: { db: Db; companyId: string; actor: { id: string; role: string }; adminId: string }) {
  if (actor.role !== 'owner') throw new ApiError('unauthorized', 'Only the owner of the company can remove admins.');
  return db.transaction(async (tx) => {
    // Owners of the company, locked, so two owners removing each other cannot both succeed.
    const owners = await tx
      .select({ id: admins.id })
      .from(admins)
      .where(and(eq(admins.companyId, companyId), eq(admins.role, 'owner')))
      .for('update');
    const [target] = await tx.select().from(admins).where(and(eq(admins.id, adminId), eq(admins.companyId, companyId)));
    if (!target) throw notFound('admin', 'admin_id');
    if (target.role === 'owner' && owners.length <= 1) {
      throw invalid(target.id === actor.id ? 'You are the only owner: the company cannot be left without one.' : 'The company cannot be left without an owner.', 'admin_id');
    }
    await tx.delete(admins).where(eq(admins.id, target.id));
    return { id: target.id, email: target.email, role: target.role };
  });
}
