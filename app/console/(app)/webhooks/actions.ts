'use server';
import { revalidatePath } from 'next/cache';
import { requireUser } from '@/lib/auth';
import { getDb } from '@/lib/db/client';
import { topic as topicSchema, webhookCreate } from '@/lib/api/schemas/webhooks';
import { createWebhook, listSubscriptions, subscribe, unsubscribe, webhookSecret } from '@/lib/billing/webhooks/webhooks';
import { retryDelivery } from '@/lib/billing/webhooks/delivery';
import { act, field, fieldValues, parseWith, type FormState } from '@/lib/console/forms';

function topicsOf(fd: FormData) {
  return fieldValues(fd, 'topics').map((t) => parseWith(topicSchema, t, ['topics']));
}

/** POST /v1/companies/{company_id}/webhooks, then .../subscribe/{topic} for each chosen topic. */
export async function createWebhookAction(_: FormState, fd: FormData): Promise<FormState> {
  return act(async () => {
    const user = await requireUser();
    const db = await getDb();
    const input = parseWith(webhookCreate, {
      url: field(fd, 'url'),
      ...(field(fd, 'username') && { username: field(fd, 'username') }),
      ...(field(fd, 'password') && { password: field(fd, 'password') }),
    });
    const topics = topicsOf(fd);
    const { webhook } = await createWebhook({ db, companyId: user.companyId, input });
    for (const t of topics) await subscribe({ db, companyId: user.companyId, webhookId: webhook.id, topic: t });
    revalidatePath('/console/webhooks');
    return {
      message: `Webhook created${topics.length ? `, subscribed to ${topics.join(', ')}` : ''}.`,
      secret: { label: 'Signing secret (verify the webhook-signature header with it)', value: webhookSecret(webhook) },
      link: { href: `/console/webhooks/${webhook.id}`, label: 'Open the webhook' },
    };
  });
}

/** Subscribes to the ticked topics and unsubscribes from the others. */
export async function setTopicsAction(webhookId: string, _: FormState, fd: FormData): Promise<FormState> {
  return act(async () => {
    const user = await requireUser();
    const db = await getDb();
    const wanted = new Set<string>(topicsOf(fd));
    const current = new Set<string>((await listSubscriptions({ db, companyId: user.companyId, webhookId })).map((s) => s.topic));
    for (const t of wanted) if (!current.has(t)) await subscribe({ db, companyId: user.companyId, webhookId, topic: t });
    for (const t of current) if (!wanted.has(t)) await unsubscribe({ db, companyId: user.companyId, webhookId, topic: t });
    revalidatePath(`/console/webhooks/${webhookId}`);
    revalidatePath('/console/webhooks');
    return wanted.size ? `Subscribed to ${[...wanted].join(', ')}.` : 'Subscribed to no topics: nothing will be sent.';
  });
}

/** POST .../webhooks/{webhook_id}/deliveries/{delivery_id}/retry. */
export async function resendAction(webhookId: string, deliveryId: string, _: FormState, _fd: FormData): Promise<FormState> {
  return act(async () => {
    const user = await requireUser();
    const view = await retryDelivery({ db: await getDb(), companyId: user.companyId, webhookId, deliveryId });
    revalidatePath(`/console/webhooks/${webhookId}`);
    const attempt = view.attempts_log[view.attempts_log.length - 1];
    if (attempt?.response_status && attempt.response_status >= 200 && attempt.response_status < 300) return `Re-sent: the receiver answered ${attempt.response_status}.`;
    return `Re-sent, but it failed: ${attempt?.response_status ? `the receiver answered ${attempt.response_status}` : (attempt?.error ?? 'no answer')}.`;
  });
}
