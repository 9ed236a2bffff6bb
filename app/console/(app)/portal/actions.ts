'use server';
import { consoleAction, field, FormInvalid, parseWith } from '@/lib/console/forms';
import { dollarsToCents } from '@/lib/console/format';
import { forgetCachedKeys } from '@/lib/api/credentials';
import { companyUpdate, MAX_PORTAL_TOPUPS, MAX_USAGE_PROPERTIES } from '@/lib/api/schemas/portal';
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

/**
 * PATCH /v1/companies/{company_id} with usage_properties: the filled fields in order. An error
 * names the field it came from (usage_properties[i] is the i-th field, blanks included).
 */
export const saveUsagePropertiesAction = consoleAction(
  (fd) => {
    const fields = Array.from({ length: MAX_USAGE_PROPERTIES }, (_, i) => ({ i, name: field(fd, `usage_properties[${i}]`) })).filter((f) => f.name);
    try {
      return parseWith(companyUpdate, { usage_properties: fields.map((f) => f.name) });
    } catch (err) {
      if (!(err instanceof FormInvalid)) throw err;
      throw new FormInvalid(err.errors.map((e) => ({ ...e, param: e.param?.replace(/^usage_properties\[(\d+)\]/, (_, n: string) => `usage_properties[${fields[Number(n)].i}]`) ?? null })));
    }
  },
  async ({ db, companyId, input }) => {
    const company = await updateCompany({ db, companyId, input });
    forgetCachedKeys();
    return company.usageProperties.length
      ? `Usage is now rolled up by ${company.usageProperties.join(', ')}. Older hours of a newly added property are filled in the background; reports are exact meanwhile.`
      : 'Usage is rolled up by no property: grouping by one reads the events.';
  },
  { revalidate: '/console/portal' },
);
