'use server';
import { revalidatePath } from 'next/cache';
import { redirect } from 'next/navigation';
import { requireUser } from '@/lib/auth';
import { getDb } from '@/lib/db/client';
import { act, field, parseWith, rawField, type FormState } from '@/lib/console/forms';
import { adminInvite, changePassword, inviteAdmin, passwordChange, removeAdmin } from '@/lib/console/team';

export async function inviteAdminAction(_: FormState, fd: FormData): Promise<FormState> {
  return act(async () => {
    const user = await requireUser();
    const input = parseWith(adminInvite, { email: field(fd, 'email'), password: rawField(fd, 'password') });
    const admin = await inviteAdmin({ db: await getDb(), companyId: user.companyId, inviterRole: user.role, input });
    revalidatePath('/console/team');
    return `${admin.email} can now sign in at /console/sign-in with the password you chose. Send it to them privately; they can change it on this page.`;
  });
}

/** Every session of the admin ends with the old password, this one too: they sign in again. */
export async function changePasswordAction(_: FormState, fd: FormData): Promise<FormState> {
  return act(async () => {
    const user = await requireUser();
    const input = parseWith(passwordChange, { current_password: rawField(fd, 'current_password'), new_password: rawField(fd, 'new_password') });
    await changePassword({ db: await getDb(), companyId: user.companyId, adminId: user.id, input });
    redirect('/console/sign-in?notice=password-changed');
  });
}

export async function removeAdminAction(adminId: string, _: FormState, _fd: FormData): Promise<FormState> {
  return act(async () => {
    const user = await requireUser();
    const removed = await removeAdmin({ db: await getDb(), companyId: user.companyId, actor: user, adminId });
    if (removed.id === user.id) redirect('/console/sign-in');
    revalidatePath('/console/team');
    // The form goes with the removed row, so the page itself tells how it went.
    redirect('/console/team?removed=1');
  });
}
