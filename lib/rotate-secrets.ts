import { and, asc, eq, isNotNull, sql, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Db } from './db/client';
import { companies, idempotencyKeys, webhooks } from './db/schema';
import { decrypt, encrypt, isSealedWithCurrentKey } from './crypto';

/** Every column that holds a value sealed with lib/crypto's encrypt, with its table's key. */
const SEALED_COLUMNS: { name: string; table: PgTable; key: PgColumn[]; column: PgColumn }[] = [
  { name: 'companies.processor_key_enc', table: companies, key: [companies.id], column: companies.processorKeyEnc },
  { name: 'webhooks.secret_enc', table: webhooks, key: [webhooks.id], column: webhooks.secretEnc },
  { name: 'webhooks.password_enc', table: webhooks, key: [webhooks.id], column: webhooks.passwordEnc },
  { name: 'idempotency_keys.response_body', table: idempotencyKeys, key: [idempotencyKeys.companyId, idempotencyKeys.key], column: idempotencyKeys.responseBody },
];

export type RotationReport = { column: string; resealed: number; current: number; unreadable: string[] }[];

const BATCH = 500;

/**
 * Seals every stored secret again under the current APP_SECRET (reading old values with
 * APP_SECRET_PREVIOUS), row by row, each update only over the value it read. Values that
 * neither secret opens are listed by row key and left as they are. Safe to run while the
 * service runs (on PostgreSQL) and to run again.
 */
export async function resealStoredSecrets(db: Db): Promise<RotationReport> {
  const report: RotationReport = [];
  for (const c of SEALED_COLUMNS) {
    const entry = { column: c.name, resealed: 0, current: 0, unreadable: [] as string[] };
    let after: unknown[] | null = null;
    for (;;) {
      const keyAfter: SQL | undefined = after ? sql`(${sql.join(c.key, sql`, `)}) > (${sql.join(after.map((v) => sql`${v}`), sql`, `)})` : undefined;
      const rows = (await db
        .select({ ...Object.fromEntries(c.key.map((k, i) => [`k${i}`, k])), value: c.column })
        .from(c.table)
        .where(and(isNotNull(c.column), keyAfter))
        .orderBy(...c.key.map((k) => asc(k)))
        .limit(BATCH)) as Record<string, unknown>[];
      if (rows.length === 0) break;
      for (const row of rows) {
        const key = c.key.map((_, i) => row[`k${i}`]);
        const value = row.value as string;
        if (isSealedWithCurrentKey(value)) {
          entry.current++;
          continue;
        }
        let plain: string;
        try {
          plain = decrypt(value);
        } catch {
          entry.unreadable.push(key.join('/'));
          continue;
        }
        const matchKey = c.key.map((k, i) => eq(k, key[i]));
        const updated = await db
          .update(c.table)
          .set({ [columnProperty(c.table, c.column)]: encrypt(plain) })
          .where(and(...matchKey, eq(c.column, value)))
          .returning({ one: sql`1` });
        // Changed meanwhile: whoever changed it sealed it under the current secret.
        if (updated.length) entry.resealed++;
        else entry.current++;
      }
      after = c.key.map((_, i) => rows[rows.length - 1][`k${i}`]);
    }
    report.push(entry);
  }
  return report;
}

/** The property name drizzle's update().set() takes for a column of a table. */
function columnProperty(table: PgTable, column: PgColumn): string {
  const entry = Object.entries(table).find(([, v]) => v === column);
  if (!entry) throw new Error(`column ${column.name} is not on its table`);
  return entry[0];
}
