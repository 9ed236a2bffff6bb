'use server';
import { revalidatePath } from 'next/cache';
import { requireUser } from '@/lib/auth';
import { getDb } from '@/lib/db/client';
import { issueApiKey, revokeApiKey } from '@/lib/billing/companies/companies';
import { forgetCachedKeys } from '@/lib/api/auth';
import { act, type FormState } from '@/lib/console/forms';

/** POST /v1/companies/{company_id}/api_keys. */
export async function issueKeyAction(_: FormState, _fd: FormData): Promise<FormState> {
  return act(async () => {
    const user = await requireUser();
    const { key, secret } = await issueApiKey({ db: await getDb(), companyId: user.companyId });
    revalidatePath('/console/api-keys');
    return { message: `Key ending ${key.last4} issued.`, secret: { label: `API key (use it as the password, with ${user.companyId} as the username)`, value: secret } };
  });
}

/** DELETE /v1/companies/{company_id}/api_keys/{key_id}. */
export async function revokeKeyAction(keyId: string, _: FormState, _fd: FormData): Promise<FormState> {
  return act(async () => {
    const user = await requireUser();
    const key = await revokeApiKey({ db: await getDb(), companyId: user.companyId, keyId });
    forgetCachedKeys(); // as the API's DELETE does: the key stops working in this process at once
    revalidatePath('/console/api-keys');
    return `Key ending ${key.last4} revoked: calls with it now get 401.`;
  });
}
