import type { Metadata } from 'next';
import Link from 'next/link';
import { notFound } from 'next/navigation';
import { getDb } from '@/lib/db/client';
import { ApiError } from '@/lib/errors';
import { portalReceipt, type Receipt } from '@/lib/billing/accounts/self-serve';
import { receiptLines } from '@/lib/billing/accounts/receipt-pdf';

// The token is in the path: no Referer may carry it to another site.
export const metadata: Metadata = { title: 'Receipt', robots: { index: false }, referrer: 'no-referrer' };
export const dynamic = 'force-dynamic';

export default async function ReceiptPage({ params }: { params: Promise<{ token: string; charge_id: string }> }) {
  const { token, charge_id: chargeId } = await params;
  let receipt: Receipt;
  try {
    receipt = await portalReceipt({ db: await getDb(), token, chargeId });
  } catch (err) {
    if (err instanceof ApiError && err.type === 'not_found') notFound();
    if (err instanceof ApiError && err.type === 'link_expired') {
      return (
        <main className="mx-auto w-full max-w-md px-4 py-10">
          <div className="rounded-lg border border-slate-200 bg-white p-6 shadow-sm">
            <h1 className="text-xl font-semibold">Receipt</h1>
            <p className="mt-3 text-slate-700" role="status">
              {err.message}
            </p>
          </div>
        </main>
      );
    }
    throw err;
  }
  return (
    <main className="mx-auto w-full max-w-2xl space-y-4 px-4 py-6 sm:py-10">
      <p className="text-sm">
        <Link href={`/portal/${token}`} className="text-blue-800 underline">
          Back to your account
        </Link>
      </p>
      <article className="rounded-lg border border-slate-200 bg-white p-4 shadow-sm sm:p-8" aria-labelledby="receipt-title">
        <p className="text-sm font-medium text-slate-700">{receipt.companyName}</p>
        <h1 id="receipt-title" className="mt-1 text-2xl font-semibold">
          Receipt
        </h1>
        <dl className="mt-4 grid grid-cols-1 gap-y-1 sm:grid-cols-[auto_1fr] sm:gap-x-6 sm:gap-y-3">
          {receiptLines(receipt).map(([label, value]) => (
            <div key={label} className="contents">
              <dt className="text-sm font-medium text-slate-700">{label}</dt>
              <dd className="mb-2 break-words sm:mb-0">{value}</dd>
            </div>
          ))}
        </dl>
        <p className="mt-6">
          <a href={`/portal/${token}/receipts/${receipt.chargeId}/pdf`} className="inline-block rounded bg-blue-800 px-4 py-2 font-medium text-white hover:bg-blue-900" download>
            Download PDF
          </a>
        </p>
      </article>
    </main>
  );
}
