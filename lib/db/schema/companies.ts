import { sql } from 'drizzle-orm';
import { index, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';

export const companies = pgTable('companies', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  email: text('email').notNull(),
  // AES-256-GCM ciphertext (iv.tag.data, base64url) of the company's Stripe secret or restricted key.
  processorKeyEnc: text('processor_key_enc'),
  processorPublishableKey: text('processor_publishable_key'),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
});

export const apiKeys = pgTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id').notNull().references(() => companies.id),
    // sha256 of the secret; the secret itself is shown once and never stored.
    keyHash: text('key_hash').notNull(),
    last4: text('last4').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true, mode: 'date' }),
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [uniqueIndex('api_keys_key_hash').on(t.keyHash), index('api_keys_company').on(t.companyId, t.id)],
);

export const admins = pgTable(
  'admins',
  {
    id: text('id').primaryKey(),
    companyId: text('company_id').notNull().references(() => companies.id),
    email: text('email').notNull(),
    // scrypt$N$salt$hash
    passwordHash: text('password_hash').notNull(),
    role: text('role').notNull().default('admin'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [uniqueIndex('admins_email').on(sql`lower(${t.email})`)],
);

export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    companyId: text('company_id').notNull(),
    key: text('key').notNull(),
    method: text('method').notNull(),
    path: text('path').notNull(),
    requestHash: text('request_hash').notNull(),
    status: text('status').notNull(), // 'running' | 'done'
    responseStatus: text('response_status'),
    responseBody: text('response_body'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [uniqueIndex('idempotency_keys_pk').on(t.companyId, t.key), index('idempotency_keys_created').on(t.createdAt)],
);
