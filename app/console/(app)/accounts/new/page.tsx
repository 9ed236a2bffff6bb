import { requireUser } from '@/lib/console/next-auth';
import { getDb } from '@/lib/db/client';
import { planChoices } from '@/lib/console/queries';
import { planSummary } from '@/lib/console/format';
import { NewAccountForm } from '@/components/console/account-forms';
import { PageHeader } from '@/components/console/ui';
import { createAccountAction } from '../actions';

export const metadata = { title: 'New account' };

export default async function NewAccountPage() {
  const user = await requireUser();
  const plans = await planChoices({ db: await getDb(), companyId: user.companyId });
  return (
    <>
      <PageHeader title="New account" back={{ href: '/console/accounts', label: 'Accounts' }} description="An account is one of your customers. It gets a customer at the payment processor." />
      <div className="max-w-xl rounded-lg border border-slate-200 bg-white p-4 shadow-sm">
        <NewAccountForm action={createAccountAction} plans={plans.map((p) => ({ id: p.id, name: p.name, summary: planSummary(p), charge: p.chargeAmount }))} />
      </div>
    </>
  );
}
