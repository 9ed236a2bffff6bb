'use server';
import { headers } from 'next/headers';
import { consoleAction, field, parseWith, rawField } from '@/lib/console/forms';
import { clientAddress } from '@/lib/net/client-address';
import { adminInvite, changePassword, inviteAdmin, passwordChange, removeAdmin } from '@/lib/console/team';

export const inviteAdminAction = consoleAction(
  (fd) => parseWith(adminInvite, { email: field(fd, 'email'), password: rawField(fd, 'password') }),
  async ({ db, companyId, user, input }) => {
    const admin = await inviteAdmin({ db, companyId, inviterRole: user.role, input });
    return `${admin.email} can now sign in at /console/sign-in with the password you chose. Send it to them privately; they can change it on this page.`;
  },
  { revalidate: '/console/team' },
);

/** Every session of the admin ends with the old password, this one too: they sign in again. */
export const changePasswordAction = consoleAction(
  (fd) => parseWith(passwordChange, { current_password: rawField(fd, 'current_password'), new_password: rawField(fd, 'new_password') }),
  async ({ db, companyId, user, input }) => {
    await changePassword({ db, companyId, adminId: user.id, input, address: clientAddress(await headers()) });
    return { redirect: '/console/sign-in?notice=password-changed' };
  },
);

export const removeAdminAction = consoleAction(
  null,
  async ({ db, companyId, user }, adminId: string) => {
    const removed = await removeAdmin({ db, companyId, actor: user, adminId });
    if (removed.id === user.id) return { redirect: '/console/sign-in' };
    // The form goes with the removed row, so the page itself tells how it went.
    return { redirect: '/console/team?removed=1' };
  },
  { revalidate: '/console/team' },
);
