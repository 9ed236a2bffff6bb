import { requireUser } from '@/lib/auth';
import { getDb } from '@/lib/db/client';
import { listAdmins } from '@/lib/console/team';
import { ChangePasswordForm, InviteForm } from '@/components/console/team-forms';
import { Badge, PageHeader, Section, Table, Td, Time } from '@/components/console/ui';
import { changePasswordAction, inviteAdminAction } from './actions';

export const metadata = { title: 'Team' };

export default async function TeamPage() {
  const user = await requireUser();
  const admins = await listAdmins({ db: await getDb(), companyId: user.companyId });
  return (
    <>
      <PageHeader title="Team" description="Everyone who can sign in to this console. Every admin sees and changes all of the company's billing." />
      <Section title="Admins">
        <Table caption="Admins" head={['Email', 'Role', 'Added']}>
          {admins.map((a) => (
            <tr key={a.id}>
              <Td className="break-all">
                {a.email}
                {a.id === user.id && <span className="text-slate-700"> (you)</span>}
              </Td>
              <Td>
                <Badge value={a.role} tone={a.role === 'owner' ? 'blue' : 'slate'} />
              </Td>
              <Td><Time value={a.createdAt} /></Td>
            </tr>
          ))}
        </Table>
      </Section>
      <div className="grid grid-cols-1 gap-4 lg:grid-cols-2">
        <Section title="Invite an admin">
          {user.role === 'owner' ? (
            <InviteForm action={inviteAdminAction} />
          ) : (
            <p className="text-slate-700">Only the owner of the company can invite admins.</p>
          )}
        </Section>
        <Section title="Your password">
          <ChangePasswordForm action={changePasswordAction} email={user.email} />
        </Section>
      </div>
    </>
  );
}
