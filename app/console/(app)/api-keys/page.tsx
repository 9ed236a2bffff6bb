import { requireUser } from '@/lib/console/next-auth';
import { getDb } from '@/lib/db/client';
import { listApiKeys } from '@/lib/billing/companies/companies';
import { formatTime } from '@/lib/console/format';
import { ActionForm } from '@/components/console/action-form';
import { Badge, PageHeader, Section, Table, Td, Time } from '@/components/console/ui';
import { ListPage } from '@/components/console/list-page';
import { issueKeyAction, revokeKeyAction } from './actions';

export const metadata = { title: 'API keys' };

export default async function ApiKeysPage({ searchParams }: { searchParams: Promise<{ after?: string }> }) {
  const user = await requireUser();
  const { after } = await searchParams;
  const page = await listApiKeys({ db: await getDb(), companyId: user.companyId, page: { limit: 50, starting_after: after } });
  return (
    <>
      <PageHeader
        title="API keys"
        description={
          <>
            Your backend calls the API with HTTP Basic auth: username <code className="font-mono text-sm">{user.companyId}</code>, password an API key. Keys are stored as hashes, so a key is shown only when it is issued.
          </>
        }
      />
      <Section title="Issue a key" description="Issue a new key before revoking an old one, so your backend never goes without.">
        <ActionForm action={issueKeyAction} submitLabel="Issue a new key" pendingLabel="Issuing…" label="Issue a key" />
      </Section>
      <Section title="Keys">
        <ListPage page={page} after={after} basePath="/console/api-keys" pagerLabel="Key pages" empty="No keys.">
          {(items) => (
          <Table caption="API keys" head={['Key', 'Status', 'Created', 'Last used', '']}>
            {items.map((k) => (
              <tr key={k.id}>
                <Td>
                  <span className="font-mono">…{k.last4}</span>
                  <span className="block font-mono text-xs text-slate-700">{k.id}</span>
                </Td>
                <Td>{k.revokedAt ? <Badge value="revoked" /> : <Badge value="active" />}</Td>
                <Td><Time value={k.createdAt} /></Td>
                <Td>{k.lastUsedAt ? <Time value={k.lastUsedAt} /> : 'Never'}</Td>
                <Td>
                  {k.revokedAt ? (
                    <span className="text-sm text-slate-700">Revoked {formatTime(k.revokedAt)}</span>
                  ) : (
                    <ActionForm action={revokeKeyAction.bind(null, k.id)} submitLabel="Revoke" confirm={`Revoke key …${k.last4}`} variant="danger" pendingLabel="Revoking…" label={`Revoke key ending ${k.last4}`} className="space-y-2" />
                  )}
                </Td>
              </tr>
            ))}
          </Table>
          )}
        </ListPage>
      </Section>
    </>
  );
}
