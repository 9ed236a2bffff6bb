import Link from 'next/link';
import { requireUser } from '@/lib/auth';
import { getDb } from '@/lib/db/client';
import { getWebhookWithTopics } from '@/lib/billing/webhooks/webhooks';
import { listDeliveries } from '@/lib/billing/webhooks/deliveries';
import { TOPICS } from '@/lib/billing/webhooks/topics';
import { orNotFound } from '@/lib/console/forms';
import { TOPIC_HELP } from '@/lib/console/topics';
import { accountNames } from '@/lib/console/queries';
import { formatTime } from '@/lib/console/format';
import { ActionForm } from '@/components/console/action-form';
import { TopicsForm } from '@/components/console/webhook-forms';
import { Badge, Facts, PageHeader, Section, Table, Td, linkClass, Time } from '@/components/console/ui';
import { ListPage } from '@/components/console/list-page';
import { resendAction, setTopicsAction } from '../actions';

export const metadata = { title: 'Webhook' };

export default async function WebhookPage({ params, searchParams }: { params: Promise<{ id: string }>; searchParams: Promise<{ after?: string }> }) {
  const user = await requireUser();
  const { id } = await params;
  const { after } = await searchParams;
  const db = await getDb();
  const { webhook, topics } = await orNotFound(getWebhookWithTopics({ db, companyId: user.companyId, webhookId: id }));
  const deliveries = await listDeliveries({ db, companyId: user.companyId, webhookId: webhook.id, page: { limit: 20, starting_after: after } });
  const names = await accountNames({ db, companyId: user.companyId, ids: deliveries.items.map((d) => d.view.account_id).filter((a): a is string => Boolean(a)) });
  return (
    <>
      <PageHeader title="Webhook" back={{ href: '/console/webhooks', label: 'Webhooks' }} description={<span className="break-all">{webhook.url}</span>} />
      <div className="grid grid-cols-1 gap-4 lg:grid-cols-2">
        <Section title="Settings">
          <Facts
            items={[
              ['URL', <span key="u" className="break-all">{webhook.url}</span>],
              ['Authentication', webhook.username ? `HTTP Basic as ${webhook.username}, plus the Standard Webhooks signature` : 'Standard Webhooks signature (webhook-signature header)'],
              ['Payload style', webhook.style === 'type' ? 'By type (registered with POST /webhooks)' : 'By topic'],
              ['Id', <span key="i" className="font-mono text-xs">{webhook.id}</span>],
              ['Created', formatTime(webhook.createdAt)],
            ]}
          />
        </Section>
        <Section title="Topics">
          <TopicsForm action={setTopicsAction.bind(null, webhook.id)} topics={TOPICS.map((t) => ({ topic: t, help: TOPIC_HELP[t] }))} subscribed={topics} />
        </Section>
      </div>
      <Section title="Deliveries" id="deliveries" description="Newest first. Each delivery is retried with backoff until the receiver answers 2xx; every attempt is listed.">
        <ListPage page={deliveries} after={after} basePath={`/console/webhooks/${webhook.id}`} pagerLabel="Delivery pages" empty={after ? 'No older deliveries.' : 'Nothing sent yet. Deliveries appear here when a subscribed topic happens.'}>
          {(items) => (
          <ol className="space-y-4">
            {items.map(({ id: deliveryId, view: d }) => (
              <li key={deliveryId} className="rounded border border-slate-200 p-3">
                <div className="flex flex-wrap items-center justify-between gap-2">
                  <h3 className="font-medium">
                    <span className="font-mono">{d.topic}</span>
                    {d.account_id && (
                      <>
                        {' '}
                        for{' '}
                        <Link href={`/console/accounts/${d.account_id}`} className={linkClass}>
                          {names.get(d.account_id) ?? d.account_id}
                        </Link>
                      </>
                    )}
                    {d.denomination && <> ({d.denomination})</>}
                  </h3>
                  <Badge value={d.status} />
                </div>
                <p className="mt-1 text-sm text-slate-700">
                  Created {formatTime(d.created_at)} · {d.attempts} {d.attempts === 1 ? 'attempt' : 'attempts'}
                  {d.next_attempt_at && d.status === 'pending' ? ` · next attempt ${formatTime(d.next_attempt_at)}` : ''} · <span className="font-mono text-xs">{deliveryId}</span>
                </p>
                {d.attempts_log.length > 0 && (
                  <div className="mt-2">
                    <Table caption={`Attempts of delivery ${deliveryId}`} head={['Time', 'Response', 'Took', 'Error']}>
                      {d.attempts_log.map((a) => (
                        <tr key={a.id}>
                          <Td><Time value={a.created_at} /></Td>
                          <Td>{a.response_status === null ? 'no answer' : <Badge value={String(a.response_status)} tone={a.response_status >= 200 && a.response_status < 300 ? 'green' : 'red'} />}</Td>
                          <Td className="whitespace-nowrap">{a.duration_ms} ms</Td>
                          <Td>{a.error ?? ''}</Td>
                        </tr>
                      ))}
                    </Table>
                  </div>
                )}
                <details className="mt-2 text-sm">
                  <summary className="cursor-pointer text-blue-800 underline">Payload</summary>
                  <pre className="mt-1 overflow-x-auto rounded bg-slate-100 p-2 text-xs">{JSON.stringify(d.payload, null, 2)}</pre>
                </details>
                <div className="mt-2">
                  <ActionForm action={resendAction.bind(null, webhook.id, deliveryId)} submitLabel="Re-send" pendingLabel="Sending…" variant="secondary" resetOnSuccess={false} label={`Re-send delivery ${deliveryId}`} className="space-y-2" />
                </div>
              </li>
            ))}
          </ol>
          )}
        </ListPage>
      </Section>
    </>
  );
}
