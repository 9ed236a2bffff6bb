'use server';
import { consoleAction, field, FormInvalid, parseWith } from '@/lib/console/forms';
import { dollarsToCents } from '@/lib/console/format';
import { forgetCachedKeys } from '@/lib/api/credentials';
import { companyUpdate, MAX_PORTAL_TOPUPS } from '@/lib/api/schemas/portal';
import { updateCompany } from '@/lib/billing/companies/companies';

/** PATCH /v1/companies/{company_id} with portal_topups: the rows of the form, empty ones left out. */
export const savePortalTopupsAction = consoleAction(
  (fd) => {
    const rows: { denomination: string; amount_to_deposit: string; amount_to_charge: string }[] = [];
    for (let i = 0; i < MAX_PORTAL_TOPUPS; i++) {
      const [denomination, units, price] = [field(fd, `denomination_${i}`), field(fd, `units_${i}`), field(fd, `price_${i}`)];
      if (!denomination && !units && !price) continue;
      const cents = dollarsToCents(price);
      if (cents === 'not a dollar amount') throw new FormInvalid([{ param: `price_${i}`, message: 'Enter a dollar amount such as 10 or 9.99.' }]);
      rows.push({ denomination, amount_to_deposit: units, amount_to_charge: cents });
    }
    return parseWith(companyUpdate, { portal_topups: rows });
  },
  async ({ db, companyId, input }) => {
    const company = await updateCompany({ db, companyId, input });
    forgetCachedKeys();
    return company.portalTopups.length ? `The portal now offers ${company.portalTopups.length} top-up package${company.portalTopups.length === 1 ? '' : 's'}.` : 'The portal offers no top-ups.';
  },
  { revalidate: '/console/portal' },
);
