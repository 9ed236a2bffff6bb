import Link from 'next/link';
import type { Charge } from '@/lib/billing/charges/charges';
import { effectiveState, type EventRow } from '@/lib/billing/events/events';
import type { LedgerRow } from '@/lib/billing/balances/balances';
import { formatCents, formatUnits } from '@/lib/console/format';
import { Decimal } from '@/lib/money';
import { Badge, Table, Td, Time, linkClass } from './ui';

export function LedgerTable({ rows }: { rows: LedgerRow[] }) {
  return (
    <Table caption="Ledger" head={['Time', 'Denomination', 'Change', 'Balance after', 'Description', 'Type']}>
      {rows.map((t) => (
        <tr key={t.id}>
          <Td><Time value={t.createdAt} /></Td>
          <Td>{t.denomination}</Td>
          <Td className={`whitespace-nowrap tabular-nums ${t.amount.startsWith('-') ? 'text-red-800' : 'text-green-800'}`}>
            {t.amount.startsWith('-') ? '' : '+'}
            {formatUnits(t.amount)}
          </Td>
          <Td className="tabular-nums">{formatUnits(t.endingBalance)}</Td>
          <Td>{t.description}</Td>
          <Td>{t.type}</Td>
        </tr>
      ))}
    </Table>
  );
}

export function ChargesTable({ rows }: { rows: Charge[] }) {
  return (
    <Table caption="Charges" head={['Time', 'Amount', 'Status', 'Description', 'Failure']}>
      {rows.map((c) => (
        <tr key={c.id}>
          <Td><Time value={c.createdAt} /></Td>
          <Td className="tabular-nums">{formatCents(c.amount)}</Td>
          <Td>
            <Badge value={c.status} />
          </Td>
          <Td>{c.description}</Td>
          <Td>{c.failureMessage ?? ''}</Td>
        </tr>
      ))}
    </Table>
  );
}

/**
 * Events as the console lists them. With `names`, an account column links each event to its
 * account; `detailed` adds how it was priced and its id.
 */
export function EventsTable({ caption, rows, at, names, detailed = false, ids = false }: { caption: string; rows: EventRow[]; at: Date; names?: Map<string, string>; detailed?: boolean; ids?: boolean }) {
  const head = ['Time', ...(names ? ['Account'] : []), 'Type', 'State', 'Cost', ...(detailed ? ['Priced by'] : []), ...(detailed || ids ? ['Id'] : [])];
  return (
    <Table caption={caption} head={head}>
      {rows.map((e) => (
        <tr key={e.id}>
          <Td><Time value={e.createdAt} /></Td>
          {names && (
            <Td>
              <Link href={`/console/accounts/${e.accountId}`} className={linkClass}>
                {names.get(e.accountId) ?? e.accountId}
              </Link>
            </Td>
          )}
          <Td>{e.type}</Td>
          <Td>
            <Badge value={effectiveState(e, at)} />
          </Td>
          <Td className="whitespace-nowrap tabular-nums">
            {e.costAmount !== null ? `${formatUnits(e.costAmount)} ${e.costDenomination}` : 'not billed'}
            {/* A hold settled at another amount: what was held beside what it cost. */}
            {e.heldCost !== null && e.heldCost !== undefined && e.state === 'complete' && e.costAmount !== null && !new Decimal(e.heldCost).eq(e.costAmount) && (
              <span className="block text-xs text-slate-600">held {formatUnits(e.heldCost)}</span>
            )}
          </Td>
          {detailed && <Td>{e.pricedBy}</Td>}
          {(detailed || ids) && <Td mono>{e.id}</Td>}
        </tr>
      ))}
    </Table>
  );
}
