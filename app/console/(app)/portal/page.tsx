import { requireUser } from '@/lib/console/next-auth';
import { getDb } from '@/lib/db/client';
import { getCompany } from '@/lib/billing/companies/companies';
import { MAX_PORTAL_TOPUPS, MAX_USAGE_PROPERTIES } from '@/lib/api/schemas/portal';
import { PageHeader, Section } from '@/components/console/ui';
import { PortalTopupsForm, UsagePropertiesForm } from '@/components/console/portal-form';
import { savePortalTopupsAction, saveUsagePropertiesAction } from './actions';

export const metadata = { title: 'Customer portal' };

export default async function PortalSettingsPage() {
  const user = await requireUser();
  const company = await getCompany({ db: await getDb(), companyId: user.companyId });
  const rows = company.portalTopups.map((t) => ({ denomination: t.denomination, units: t.amount_to_deposit, price: (t.amount_to_charge / 100).toFixed(2) }));
  return (
    <>
      <PageHeader title="Customer portal" description="What your customers can do on the portal page an account's portal link opens." />
      <Section
        title="Top-up packages"
        description={`Credit your customers can buy with their card on file, at most ${MAX_PORTAL_TOPUPS}. Leave a row empty to remove it. The same as PATCH /v1/companies/{company_id} with portal_topups.`}
      >
        <PortalTopupsForm action={savePortalTopupsAction} rows={rows} max={MAX_PORTAL_TOPUPS} />
      </Section>
      <Section
        title="Usage properties"
        description={`Event properties usage reports group by quickly (GET /v1/accounts/{account_id}/usage?group_by=property:<name>), at most ${MAX_USAGE_PROPERTIES}. Pick properties with few values, such as a model or a region. Any other property can still be asked for, read from the events, more slowly. The same as PATCH /v1/companies/{company_id} with usage_properties.`}
      >
        <UsagePropertiesForm action={saveUsagePropertiesAction} names={company.usageProperties} max={MAX_USAGE_PROPERTIES} />
      </Section>
    </>
  );
}
