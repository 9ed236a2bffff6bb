import { requireUser } from '@/lib/console/next-auth';
import { getDb } from '@/lib/db/client';
import { listAdmins } from '@/lib/console/team';
import { ChangePasswordForm, InviteForm, RemoveAdminForm } from '@/components/console/team-forms';
import { Badge, PageHeader, Section, Table, Td, Time } from '@/components/console/ui';
import { changePasswordAction, inviteAdminAction, removeAdminAction } from './actions';

export const metadata = { title: 'Team' };

export default async function TeamPage({ searchParams }: { searchParams: Promise<{ removed?: string }> }) {
  const user = await requireUser();
  const { removed } = await searchParams;
  const admins = await listAdmins({ db: await getDb(), companyId: user.companyId });
  const owners = admins.filter((a) => a.role === 'owner').length;
  // The company keeps an owner: the last one is not offered for removal.
  const removable = (a: (typeof admins)[number]) => user.role === 'owner' && (a.role !== 'owner' || owners > 1);
  return (
    <>
      <PageHeader title="Team" description="Everyone who can sign in to this console. Every admin sees and changes all of the company's billing." />
      {removed && (
        <p role="status" className="mb-4 rounded border border-green-300 bg-green-50 p-3 text-sm text-green-900">
          The admin is removed: their sessions have ended, and they can no longer sign in.
        </p>
      )}
      <Section title="Admins">
        <Table caption="Admins" head={user.role === 'owner' ? ['Email', 'Role', 'Added', ''] : ['Email', 'Role', 'Added']}>
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
              {user.role === 'owner' && <Td>{removable(a) && <RemoveAdminForm action={removeAdminAction.bind(null, a.id)} email={a.email} />}</Td>}
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
