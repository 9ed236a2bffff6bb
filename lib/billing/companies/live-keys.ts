import { isNotNull, or } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { companies } from '../../db/schema';
import { decrypt } from '../../crypto';
import { isLiveKey } from '../../processor/stripe';
import { setting, TEST_SETTINGS, testSettingsRefusal } from '../../env';

/** Whether any company has a live Stripe key stored (secret or restricted, sealed; or publishable). */
export async function liveKeysStored(db: Db): Promise<boolean> {
  const rows = await db
    .select({ sealed: companies.processorKeyEnc, publishable: companies.processorPublishableKey })
    .from(companies)
    .where(or(isNotNull(companies.processorKeyEnc), isNotNull(companies.processorPublishableKey)));
  return rows.some((r) => {
    if (isLiveKey(r.publishable ?? '')) return true;
    try {
      return r.sealed !== null && isLiveKey(decrypt(r.sealed));
    } catch {
      // Sealed under a secret this process does not hold: it cannot charge with it either.
      return false;
    }
  });
}

/**
 * Why this process must not start, checked once the database is open: a test setting that is on
 * while live keys are stored (real payments). Empty when it may start. The database is read only
 * when a test setting is on.
 */
export async function testSettingsRefusedByStoredKeys(db: Db): Promise<string[]> {
  const env = { BILLING_TEST_CLOCK: setting('BILLING_TEST_CLOCK'), WEBHOOK_ALLOW_PRIVATE: setting('WEBHOOK_ALLOW_PRIVATE'), ALLOW_TEST_SETTINGS_IN_PRODUCTION: setting('ALLOW_TEST_SETTINGS_IN_PRODUCTION') };
  if (!TEST_SETTINGS.some((name) => env[name])) return [];
  if (!(await liveKeysStored(db))) return [];
  return testSettingsRefusal(env, { liveKeyIn: 'a company of this database' });
}
