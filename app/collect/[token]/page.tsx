import type { Metadata } from 'next';
import { getDb } from '@/lib/db/client';
import { viewCollector } from '@/lib/billing/accounts/collector';
import { CollectorForm } from '@/components/collector-form';
import { setting } from '@/lib/env';

// The token is in the path: no Referer may carry it to another site.
export const metadata: Metadata = { title: 'Add a payment card', robots: { index: false }, referrer: 'no-referrer' };
export const dynamic = 'force-dynamic';

const PROBLEMS = {
  unknown: () => 'This link is not valid. Ask the company that sent it for a new one.',
  used: () => 'This link was already used, and your card is saved. You can close this page.',
  expired: () => 'This link has expired. Ask the company that sent it for a new one.',
  spent: (company?: string) => `This link can no longer be used: too many card attempts through it failed. Ask ${company ?? 'the company that sent it'} for a new link.`,
};

function money(cents: number): string {
  return (cents / 100).toLocaleString('en-US', { style: 'currency', currency: 'USD' });
}

export default async function CollectPage({ params }: { params: Promise<{ token: string }> }) {
  const { token } = await params;
  const result = await viewCollector({ db: await getDb(), token });
  const stripeApi = setting('STRIPE_API_URL');
  const local = stripeApi && /^http:\/\/(127\.0\.0\.1|localhost)/.test(stripeApi) ? stripeApi : null;
  return (
    <main className="mx-auto w-full max-w-md px-4 py-10">
      {'problem' in result ? (
        <div className="rounded-lg border border-slate-200 bg-white p-6 shadow-sm">
          <h1 className="text-xl font-semibold">Add a payment card</h1>
          <p className="mt-3 text-slate-700" role="status">{PROBLEMS[result.problem](result.companyName)}</p>
        </div>
      ) : (
        <div className="rounded-lg border border-slate-200 bg-white p-6 shadow-sm">
          <p className="text-sm font-medium text-slate-600">{result.view.companyName}</p>
          <h1 className="mt-1 text-xl font-semibold">Add a payment card</h1>
          <p className="mt-2 text-slate-700">
            For <span className="font-medium">{result.view.accountName}</span>.
            {result.view.plan && result.view.plan.charge > 0 && (
              <> Saving the card starts the <span className="font-medium">{result.view.plan.name}</span> plan and charges {money(result.view.plan.charge)} now, then every {result.view.plan.period}.</>
            )}
            {result.view.plan && result.view.plan.charge === 0 && <> Saving the card starts the <span className="font-medium">{result.view.plan.name}</span> plan.</>}
          </p>
          {result.view.pastDue && (
            <p className="mt-3 rounded bg-red-50 p-3 text-red-900">The last renewal payment did not go through. Saving the card tries it again at once, with this card.</p>
          )}
          {result.view.publishableKey ? (
            <CollectorForm
              token={token}
              publishableKey={result.view.publishableKey}
              stripeJsUrl={local ? `${local}/stripe-js/v3` : null}
              quote={result.view.plan && { plan_id: result.view.plan.id, charge: result.view.plan.charge }}
            />
          ) : (
            <p className="mt-4 rounded bg-amber-50 p-3 text-amber-900" role="alert">{result.view.companyName} has not set up card payments yet. Please contact them.</p>
          )}
        </div>
      )}
    </main>
  );
}
