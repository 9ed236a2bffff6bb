'use server';
import { issueApiKey, revokeApiKey } from '@/lib/billing/companies/companies';
import { forgetCachedKeys } from '@/lib/api/credentials';
import { consoleAction } from '@/lib/console/forms';

/** POST /v1/companies/{company_id}/api_keys. */
export const issueKeyAction = consoleAction(
  null,
  async ({ db, companyId }) => {
    const { key, secret } = await issueApiKey({ db, companyId });
    return { message: `Key ending ${key.last4} issued.`, secret: { label: `API key (use it as the password, with ${companyId} as the username)`, value: secret } };
  },
  { revalidate: '/console/api-keys' },
);

/** DELETE /v1/companies/{company_id}/api_keys/{key_id}. */
export const revokeKeyAction = consoleAction(
  null,
  async ({ db, companyId }, keyId: string) => {
    const key = await revokeApiKey({ db, companyId, keyId });
    forgetCachedKeys(); // as the API's DELETE does: the key stops working in this process at once
    return `Key ending ${key.last4} revoked: calls with it now get 401.`;
  },
  { revalidate: '/console/api-keys' },
);
