'use client';
import { useEffect, useRef, useState } from 'react';
import { useRouter } from 'next/navigation';
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

/** The plan start the page shows (its plan and what saving the card charges): sent with the card, which is charged only that. */
export type Quote = { plan_id: string; charge: number } | null;

export function CollectorForm(props: { token: string; publishableKey: string; stripeJsUrl: string | null; quote: Quote }) {
  const stripePromise = useStripePromise(props.publishableKey, props.stripeJsUrl);
  if (!stripePromise) return <p className="mt-6 text-slate-600" role="status">Loading the secure card form…</p>;
  return (
    <Elements stripe={stripePromise}>
      <CardForm submitUrl={`/collect/${encodeURIComponent(props.token)}/submit`} mode="collector" quote={props.quote} />
    </Elements>
  );
}

/** The customer portal's form to replace the card on file: the collector's form, kept after a save. */
export function PortalCardForm(props: { token: string; publishableKey: string; stripeJsUrl: string | null; quote: Quote }) {
  const stripePromise = useStripePromise(props.publishableKey, props.stripeJsUrl);
  if (!stripePromise) return <p className="mt-4 text-slate-700" role="status">Loading the secure card form…</p>;
  return (
    <Elements stripe={stripePromise}>
      <CardForm submitUrl={`/portal/${encodeURIComponent(props.token)}/card`} mode="portal" quote={props.quote} />
    </Elements>
  );
}

type Outcome = { payment_method?: { brand: string; last4: string } | null; renewal?: { status: 'paid' } | { status: 'failed'; message: string } | null };

function savedMessage(data: Outcome | undefined): string {
  const pm = data?.payment_method;
  const saved = pm ? `Your ${pm.brand} card ending in ${pm.last4} is saved.` : 'Your card is saved.';
  const renewal = data?.renewal;
  if (renewal?.status === 'paid') return `${saved} The overdue payment went through: your plan is active again.`;
  if (renewal?.status === 'failed') return `${saved} The overdue payment did not go through: ${renewal.message}`;
  return saved;
}

function CardForm({ submitUrl, mode, quote }: { submitUrl: string; mode: 'collector' | 'portal'; quote: Quote }) {
  const stripe = useStripe();
  const elements = useElements();
  const router = useRouter();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [spent, setSpent] = useState<string | null>(null);
  const message = useRef<HTMLParagraphElement>(null);
  // What the submit answered is read out and gets the focus, so keyboard and screen reader users land on it.
  useEffect(() => message.current?.focus(), [error, done, spent]);

  async function onSubmit(e: React.FormEvent) {
    e.preventDefault();
    if (!stripe || !elements) return;
    const card = elements.getElement(CardElement);
    if (!card) return;
    setBusy(true);
    setError(null);
    setDone(null);
    const { token: cardToken, error: tokenError } = await stripe.createToken(card);
    if (tokenError || !cardToken) {
      setBusy(false);
      setError(tokenError?.message ?? 'The card could not be read. Please check the details.');
      return;
    }
    const res = await fetch(submitUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ token: cardToken.id, ...(quote && { quote }) }),
    });
    const body = await res.json().catch(() => null);
    setBusy(false);
    if (res.ok) {
      setDone(savedMessage(body?.data));
      if (mode === 'portal') {
        card.clear();
        // The card, plan and charges shown above are read again.
        router.refresh();
      }
    } else if (res.status === 410 || body?.error?.link_spent) {
      // No further card can be tried through this link: the form goes away.
      setSpent(body?.error?.message ?? 'This link can no longer be used. Ask the company that sent it for a new link.');
    } else {
      setError(body?.error?.message ?? 'Something went wrong. Please try again.');
      // A declined overdue payment still saved the card and recorded the charge: show them.
      if (mode === 'portal' && res.status === 402) router.refresh();
    }
  }

  if (spent) {
    return (
      <p ref={message} tabIndex={-1} className="mt-6 rounded bg-amber-50 p-4 text-amber-900" role="alert">
        {spent}
      </p>
    );
  }

  if (done && mode === 'collector') {
    return (
      <p ref={message} tabIndex={-1} className="mt-6 rounded bg-green-50 p-4 text-green-900" role="status">
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
        <p ref={message} tabIndex={-1} role="alert" className="rounded bg-red-50 p-3 text-sm text-red-800">
          {error}
        </p>
      )}
      {done && !error && (
        <p ref={message} tabIndex={-1} role="status" className="rounded bg-green-50 p-3 text-sm text-green-900">
          {done}
        </p>
      )}
      <button type="submit" disabled={!stripe || busy} className="w-full rounded bg-blue-800 px-4 py-3 font-medium text-white hover:bg-blue-900 focus:outline-none focus-visible:ring-2 focus-visible:ring-blue-800 focus-visible:ring-offset-2 disabled:opacity-60">
        {busy ? 'Saving…' : mode === 'portal' ? 'Save new card' : 'Save card'}
      </button>
      <p className="text-xs text-slate-600">Card details go straight to the payment processor; this service never sees the card number.</p>
    </form>
  );
}
