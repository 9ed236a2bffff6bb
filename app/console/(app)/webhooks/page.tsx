import Link from 'next/link';
import { requireUser } from '@/lib/console/next-auth';
import { getDb } from '@/lib/db/client';
import { listWebhooks } from '@/lib/billing/webhooks/webhooks';
import { TOPICS } from '@/lib/billing/webhooks/topics';
import { TOPIC_HELP } from '@/lib/console/topics';
import { formatDate } from '@/lib/console/format';
import { NewWebhookForm } from '@/components/console/webhook-forms';
import { PageHeader, Section, Table, Td, linkClass } from '@/components/console/ui';
import { ListPage } from '@/components/console/list-page';
import { createWebhookAction } from './actions';

export const metadata = { title: 'Webhooks' };

export default async function WebhooksPage({ searchParams }: { searchParams: Promise<{ after?: string }> }) {
  const user = await requireUser();
  const { after } = await searchParams;
  const page = await listWebhooks({ db: await getDb(), companyId: user.companyId, page: { limit: 50, starting_after: after } });
  return (
    <>
      <PageHeader title="Webhooks" description="URLs we call when balances change. Open one to see its deliveries and re-send them." />
      <Section title="Your webhooks">
        <ListPage page={page} after={after} basePath="/console/webhooks" pagerLabel="Webhook pages" empty="No webhooks yet: create one below.">
          {(items) => (
          <Table caption="Webhooks" head={['URL', 'Topics', 'Auth', 'Created']}>
            {items.map(({ webhook: w, topics }) => (
              <tr key={w.id}>
                <Td className="break-all">
                  <Link href={`/console/webhooks/${w.id}`} className={linkClass}>
                    {w.url}
                  </Link>
                </Td>
                <Td>{topics.length ? topics.join(', ') : <span className="text-slate-700">none</span>}</Td>
                <Td>{w.username ? `Basic (${w.username})` : 'Signature only'}</Td>
                <Td className="whitespace-nowrap">{formatDate(w.createdAt)}</Td>
              </tr>
            ))}
          </Table>
          )}
        </ListPage>
      </Section>
      <Section title="New webhook">
        <div className="max-w-2xl">
          <NewWebhookForm action={createWebhookAction} topics={TOPICS.map((t) => ({ topic: t, help: TOPIC_HELP[t] }))} />
        </div>
      </Section>
    </>
  );
}
