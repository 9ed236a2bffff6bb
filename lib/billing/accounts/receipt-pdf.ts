import PDFDocument from 'pdfkit';
import type { Receipt } from './self-serve';

const usd = (cents: number) => `$${(cents / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;

/** The receipt's lines, label and value, as the page and the PDF show them. */
export function receiptLines(r: Receipt): [string, string][] {
  return [
    ['Date', `${r.paidAt.toLocaleDateString('en-US', { year: 'numeric', month: 'long', day: 'numeric', timeZone: 'UTC' })}, ${r.paidAt.toISOString().slice(11, 16)} UTC`],
    ['Billed to', `${r.accountName} <${r.accountEmail}>`],
    ['Description', r.description],
    ['Amount paid', `${usd(r.amount)} ${r.currency.toUpperCase()}`],
    ['Payment method', r.card ? `${r.card.brand.toUpperCase()} ending in ${r.card.last4}` : 'No card charged'],
    ['Charge id', r.chargeId],
  ];
}

/**
 * The receipt as a one-page PDF (pdfkit, with the standard Helvetica fonts: nothing to embed).
 * Uncompressed: a receipt is a few kilobytes, and its text stays searchable by any tool.
 */
export async function renderReceiptPdf(r: Receipt): Promise<Buffer> {
  const doc = new PDFDocument({
    size: 'A4',
    margin: 56,
    compress: false,
    info: { Title: `Receipt ${r.chargeId}`, Author: r.companyName, Subject: r.description, CreationDate: r.paidAt },
  });
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('data', (c: Buffer) => chunks.push(c));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });
  doc.font('Helvetica-Bold').fontSize(20).text(r.companyName);
  doc.moveDown(0.3).font('Helvetica').fontSize(12).fillColor('#334155').text('Receipt');
  doc.moveDown(1.5).fillColor('#000000');
  for (const [label, value] of receiptLines(r)) {
    doc.font('Helvetica-Bold').fontSize(10).fillColor('#475569').text(label.toUpperCase());
    doc.font('Helvetica').fontSize(12).fillColor('#000000').text(value);
    doc.moveDown(0.8);
  }
  doc.moveDown(1).fontSize(9).fillColor('#475569').text(`Paid to ${r.companyName}. Keep this receipt for your records.`);
  doc.end();
  return done;
}
