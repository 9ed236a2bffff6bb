import { requireUser } from '@/lib/console/next-auth';
import { PlanForm } from '@/components/console/plan-form';
import { PageHeader } from '@/components/console/ui';
import { createPlanAction } from '../actions';

export const metadata = { title: 'New plan' };

export default async function NewPlanPage() {
  await requireUser();
  return (
    <>
      <PageHeader
        title="New plan"
        back={{ href: '/console/plans', label: 'Plans' }}
        description="A plan sets an account's price, the balances it gets each period, and what each event type costs. Plans cannot be edited once accounts use them: create a new one and change accounts over."
      />
      <div className="rounded-lg border border-slate-200 bg-white p-4 shadow-sm">
        <PlanForm action={createPlanAction} />
      </div>
    </>
  );
}
