import type { Charge } from '@/lib/billing/charges/charges';
import type { LedgerRow } from '@/lib/billing/balances/balances';
import { formatCents, formatUnits } from '@/lib/console/format';
import { Badge, Table, Td, Time } from './ui';

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
