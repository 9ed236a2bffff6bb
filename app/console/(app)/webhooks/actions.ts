'use server';
import { topic as topicSchema, webhookCreate } from '@/lib/api/schemas/webhooks';
import { createWebhook, listSubscriptions, subscribe, unsubscribe, webhookSecret } from '@/lib/billing/webhooks/webhooks';
import { retryDelivery } from '@/lib/billing/webhooks/deliveries';
import { consoleAction, field, fieldValues, parseWith, rawField } from '@/lib/console/forms';

function topicsOf(fd: FormData) {
  return fieldValues(fd, 'topics').map((t) => parseWith(topicSchema, t, ['topics']));
}

/** POST /v1/companies/{company_id}/webhooks, then .../subscribe/{topic} for each chosen topic. */
export const createWebhookAction = consoleAction(
  (fd) => ({
    webhook: parseWith(webhookCreate, {
      url: field(fd, 'url'),
      // Credentials as typed, as the API keeps them: a space is part of a password.
      ...(rawField(fd, 'username') && { username: rawField(fd, 'username') }),
      ...(rawField(fd, 'password') && { password: rawField(fd, 'password') }),
    }),
    topics: topicsOf(fd),
  }),
  async ({ db, companyId, input: { webhook: body, topics } }) => {
    // One transaction: a webhook without its topics (whose secret the form never showed) is not left behind.
    const { webhook } = await db.transaction(async (tx) => {
      const made = await createWebhook({ db: tx, companyId, input: body });
      for (const t of topics) await subscribe({ db: tx, companyId, webhookId: made.webhook.id, topic: t });
      return made;
    });
    return {
      message: `Webhook created${topics.length ? `, subscribed to ${topics.join(', ')}` : ''}.`,
      secret: { label: 'Signing secret (verify the webhook-signature header with it)', value: webhookSecret(webhook) },
      link: { href: `/console/webhooks/${webhook.id}`, label: 'Open the webhook' },
    };
  },
  { revalidate: '/console/webhooks' },
);

/** Subscribes to the ticked topics and unsubscribes from the others. */
export const setTopicsAction = consoleAction(
  (fd) => new Set<string>(topicsOf(fd)),
  async ({ db, companyId, input: wanted }, webhookId: string) => {
    await db.transaction(async (tx) => {
      const current = new Set<string>((await listSubscriptions({ db: tx, companyId, webhookId })).map((s) => s.topic));
      for (const t of wanted) if (!current.has(t)) await subscribe({ db: tx, companyId, webhookId, topic: t });
      for (const t of current) if (!wanted.has(t)) await unsubscribe({ db: tx, companyId, webhookId, topic: t });
    });
    return wanted.size ? `Subscribed to ${[...wanted].join(', ')}.` : 'Subscribed to no topics: nothing will be sent.';
  },
  { revalidate: (webhookId) => [`/console/webhooks/${webhookId}`, '/console/webhooks'] },
);

/** POST .../webhooks/{webhook_id}/deliveries/{delivery_id}/retry. */
export const resendAction = consoleAction(
  null,
  async ({ db, companyId }, webhookId: string, deliveryId: string) => {
    const view = await retryDelivery({ db, companyId, webhookId, deliveryId });
    const attempt = view.attempts_log[view.attempts_log.length - 1];
    if (attempt?.response_status && attempt.response_status >= 200 && attempt.response_status < 300) return `Re-sent: the receiver answered ${attempt.response_status}.`;
    return `Re-sent, but it failed: ${attempt?.response_status ? `the receiver answered ${attempt.response_status}` : (attempt?.error ?? 'no answer')}.`;
  },
  { revalidate: (webhookId) => `/console/webhooks/${webhookId}` },
);
