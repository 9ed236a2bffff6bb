import { withPublic, declareMethods } from '@/lib/api/route';
import { portalReceipt } from '@/lib/billing/accounts/self-serve';
import { renderReceiptPdf } from '@/lib/billing/accounts/receipt-pdf';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /portal/{token}/receipts/{charge_id}/pdf – the receipt of one succeeded charge as a PDF (public, link until it expires)
  GET: withPublic({}, async ({ db, params }) => {
    const receipt = await portalReceipt({ db, token: params.token, chargeId: params.charge_id });
    const pdf = await renderReceiptPdf(receipt);
    return new Response(new Uint8Array(pdf), {
      headers: {
        'Content-Type': 'application/pdf',
        'Content-Disposition': `attachment; filename="receipt-${receipt.chargeId}.pdf"`,
        'Cache-Control': 'private, no-store',
        'Referrer-Policy': 'no-referrer',
      },
    });
  }),
});
