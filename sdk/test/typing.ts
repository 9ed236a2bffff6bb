// Compile-time checks of the SDK's types, held by the root typecheck (tsc --noEmit): the line
// after each expect-error comment must be an error, every other line must compile. Never run.
import { Billing, BillingApiError, type Account, type Event } from '../src/index';

export async function typing(billing: Billing) {
  // Low-level calls are keyed on the document's paths and methods.
  const page = await billing.request('get', '/v1/companies/{company_id}/accounts', { query: { limit: 10 } });
  const accounts: Account[] = page.data;
  const more: boolean = page.has_more;
  const one = await billing.request('get', '/v1/accounts/{account_id}', { path: { account_id: accounts[0].id } });
  const email: string = one.data.email;
  // @ts-expect-error a path parameter the path needs is required
  await billing.request('get', '/v1/accounts/{account_id}');
  // @ts-expect-error a method the path does not answer
  await billing.request('delete', '/v1/accounts/{account_id}', { path: { account_id: 'a_1' } });
  // @ts-expect-error a path the document does not have
  await billing.request('get', '/v1/nothing');
  // @ts-expect-error a required body field is missing
  await billing.request('post', '/v1/companies/{company_id}/accounts', { body: { name: 'Ada' } });
  // @ts-expect-error an unknown query parameter
  await billing.request('get', '/v1/companies/{company_id}/events', { query: { colour: 'red' } });
  // company_id defaults to the client's, and may be given.
  await billing.request('post', '/v1/companies/{company_id}/accounts', { path: { company_id: 'c_1' }, body: { name: 'Ada', email: 'ada@example.com' } });

  // Resource methods answer the data; lists are awaited for a page or iterated for every item.
  const event: Event = (await billing.events.record('a_1', { type: 'chat' })).balance ? (await billing.events.get('ev_1')) : (await billing.events.get('ev_2'));
  for await (const e of billing.events.list({ account_id: 'a_1', state: 'rejected' })) {
    const id: string = e.id;
    void id;
  }
  // @ts-expect-error an event state the API does not have
  billing.events.list({ state: 'done' });
  // @ts-expect-error topics are the seven the API knows
  await billing.webhooks.subscribe('w_1', 'everything');

  try {
    await billing.events.record('a_1', { type: 'chat', gate_on_balance: true });
  } catch (err) {
    if (err instanceof BillingApiError && err.type === 'insufficient_balance') {
      const rejected: string | undefined = err.rejected_event_id;
      void rejected;
    }
  }
  return { accounts, more, email, event };
}
