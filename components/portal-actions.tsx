'use client';
import { useRef, useState } from 'react';
import { useRouter } from 'next/navigation';

/** A new key for each purchase: a double click or a resubmit of the same purchase never pays twice. */
function purchaseKey(): string {
  const bytes = new Uint8Array(18);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

export type TopupOffer = { denomination: string; amount_to_deposit: string; amount_to_charge: number; label: string; price: string };

/** The company's top-up packages, each a button that charges the card on file; the outcome in plain words. */
export function PortalTopups({ token, offers, hasCard }: { token: string; offers: TopupOffer[]; hasCard: boolean }) {
  const router = useRouter();
  const key = useRef(purchaseKey());
  const [busy, setBusy] = useState<number | null>(null);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);

  async function buy(i: number) {
    const offer = offers[i];
    setBusy(i);
    setOutcome(null);
    const res = await fetch(`/portal/${token}/topup`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ denomination: offer.denomination, amount_to_deposit: offer.amount_to_deposit, amount_to_charge: offer.amount_to_charge, key: key.current }),
    }).catch(() => null);
    const body = res ? await res.json().catch(() => null) : null;
    setBusy(null);
    if (res?.ok) {
      setOutcome({ ok: true, text: body?.data?.message ?? 'Paid.' });
      // The next purchase is another one.
      key.current = purchaseKey();
    } else if (res && res.status < 500 && res.status !== 409) {
      // Settled (declined, not offered, link gone): trying again is a new purchase.
      setOutcome({ ok: false, text: body?.error?.message ?? 'The top-up did not go through.' });
      key.current = purchaseKey();
    } else {
      // Unknown outcome: the same key, so trying again can never pay twice.
      setOutcome({ ok: false, text: body?.error?.message ?? 'The connection failed. Try again: you will not be charged twice.' });
    }
    router.refresh();
  }

  return (
    <div className="mt-3">
      {!hasCard && <p className="mb-2 rounded bg-amber-50 p-3 text-amber-900">Add a card below to buy credit.</p>}
      <ul className="flex flex-wrap gap-2">
        {offers.map((o, i) => (
          <li key={`${o.denomination}-${o.amount_to_deposit}-${o.amount_to_charge}`}>
            <button
              type="button"
              disabled={busy !== null || !hasCard}
              onClick={() => buy(i)}
              className="rounded border border-blue-800 px-3 py-2 text-left font-medium text-blue-900 hover:bg-blue-50 disabled:opacity-50"
            >
              {busy === i ? 'Paying…' : `Buy ${o.label} for ${o.price}`}
            </button>
          </li>
        ))}
      </ul>
      {outcome && (
        <p role={outcome.ok ? 'status' : 'alert'} className={`mt-3 rounded p-3 ${outcome.ok ? 'bg-green-50 text-green-900' : 'bg-red-50 text-red-900'}`}>
          {outcome.text}
        </p>
      )}
    </div>
  );
}

/** Turns the company's threshold refill of one balance on or off. */
export function RefillSwitch({ token, denomination, on, summary }: { token: string; denomination: string; on: boolean; summary: string }) {
  const router = useRouter();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  async function flip() {
    setBusy(true);
    setError(null);
    const res = await fetch(`/portal/${token}/refill`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ denomination, on: !on }) }).catch(() => null);
    const body = res ? await res.json().catch(() => null) : null;
    setBusy(false);
    if (!res?.ok) setError(body?.error?.message ?? 'That did not work. Please try again.');
    router.refresh();
  }

  return (
    <li className="flex flex-wrap items-center justify-between gap-x-4 gap-y-2 py-3">
      <div className="min-w-0">
        <p className="font-medium">{denomination}</p>
        <p className="text-sm text-slate-700">{summary}</p>
        <p className={`text-sm font-medium ${on ? 'text-green-900' : 'text-slate-700'}`}>{on ? 'Automatic refill is on' : 'Automatic refill is off'}</p>
        {error && (
          <p role="alert" className="text-sm text-red-800">
            {error}
          </p>
        )}
      </div>
      <button type="button" disabled={busy} onClick={flip} className="rounded border border-slate-400 px-3 py-2 font-medium hover:bg-slate-50 disabled:opacity-50">
        {busy ? 'Saving…' : on ? `Turn off refill of ${denomination}` : `Turn on refill of ${denomination}`}
      </button>
    </li>
  );
}
