'use client';
import { useEffect, useState } from 'react';
import { CardElement, Elements, useElements, useStripe } from '@stripe/react-stripe-js';
import { loadStripe } from '@stripe/stripe-js/pure';
import type { Stripe } from '@stripe/stripe-js';

/** Loads Stripe.js; in local development a stand-in served by the local Stripe-compatible server. */
function useStripePromise(publishableKey: string, stripeJsUrl: string | null) {
  const [promise, setPromise] = useState<Promise<Stripe | null> | null>(null);
  useEffect(() => {
    if (!stripeJsUrl) {
      setPromise(loadStripe(publishableKey));
      return;
    }
    const w = window as unknown as { Stripe?: unknown };
    if (w.Stripe) {
      setPromise(loadStripe(publishableKey));
      return;
    }
    const script = document.createElement('script');
    script.src = stripeJsUrl;
    script.onload = () => setPromise(loadStripe(publishableKey));
    document.head.appendChild(script);
  }, [publishableKey, stripeJsUrl]);
  return promise;
}

export function CollectorForm(props: { token: string; publishableKey: string; stripeJsUrl: string | null }) {
  const stripePromise = useStripePromise(props.publishableKey, props.stripeJsUrl);
  if (!stripePromise) return <p className="mt-6 text-slate-600" role="status">Loading the secure card form…</p>;
  return (
    <Elements stripe={stripePromise}>
      <CardForm token={props.token} />
    </Elements>
  );
}

function CardForm({ token }: { token: string }) {
  const stripe = useStripe();
  const elements = useElements();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [spent, setSpent] = useState<string | null>(null);

  async function onSubmit(e: React.FormEvent) {
    e.preventDefault();
    if (!stripe || !elements) return;
    const card = elements.getElement(CardElement);
    if (!card) return;
    setBusy(true);
    setError(null);
    const { token: cardToken, error: tokenError } = await stripe.createToken(card);
    if (tokenError || !cardToken) {
      setBusy(false);
      setError(tokenError?.message ?? 'The card could not be read. Please check the details.');
      return;
    }
    const res = await fetch(`/collect/${encodeURIComponent(token)}/submit`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ token: cardToken.id }),
    });
    const body = await res.json().catch(() => null);
    setBusy(false);
    if (res.ok) {
      const pm = body?.data?.payment_method;
      setDone(pm ? `Your ${pm.brand} card ending in ${pm.last4} is saved.` : 'Your card is saved.');
    } else if (res.status === 410 || body?.error?.link_spent) {
      // No further card can be tried through this link: the form goes away.
      setSpent(body?.error?.message ?? 'This link can no longer be used. Ask the company that sent it for a new link.');
    } else {
      setError(body?.error?.message ?? 'Something went wrong. Please try again.');
    }
  }

  if (spent) {
    return (
      <p className="mt-6 rounded bg-amber-50 p-4 text-amber-900" role="alert">
        {spent}
      </p>
    );
  }

  if (done) {
    return (
      <p className="mt-6 rounded bg-green-50 p-4 text-green-900" role="status">
        {done} You can close this page.
      </p>
    );
  }
  return (
    <form onSubmit={onSubmit} className="mt-6 space-y-4">
      <fieldset>
        <legend className="mb-2 block text-sm font-medium">Card details</legend>
        <div className="rounded border border-slate-400 bg-white px-3 py-3">
          <CardElement options={{ hidePostalCode: true, style: { base: { fontSize: '16px' } } }} />
        </div>
      </fieldset>
      {error && (
        <p role="alert" className="rounded bg-red-50 p-3 text-sm text-red-800">
          {error}
        </p>
      )}
      <button type="submit" disabled={!stripe || busy} className="w-full rounded bg-blue-800 px-4 py-3 font-medium text-white hover:bg-blue-900 disabled:opacity-60">
        {busy ? 'Saving…' : 'Save card'}
      </button>
      <p className="text-xs text-slate-600">Card details go straight to the payment processor; this service never sees the card number.</p>
    </form>
  );
}
