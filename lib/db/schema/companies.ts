import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { ADMIN_ROLES, IDEMPOTENCY_STATUSES, isOneOf, SIGN_IN_SCOPES } from './enums';

/** A credit package the portal offers: units of one denomination for whole USD cents. */
export type StoredPortalTopup = { denomination: string; amount_to_deposit: string; amount_to_charge: number };

export const companies = pgTable('companies', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  email: text('email').notNull(),
  // AES-256-GCM ciphertext (keyId.iv.tag.data, base64url; lib/crypto) of the company's Stripe secret or restricted key.
  processorKeyEnc: text('processor_key_enc'),
  processorPublishableKey: text('processor_publishable_key'),
  // The credit packages the customer portal offers to buy with the card on file (amounts as stored: units an exact decimal string, USD cents).
  portalTopups: jsonb('portal_topups').$type<StoredPortalTopup[]>().notNull().default([]),
  // The event properties usage is rolled up by each hour (usage grouped by one of them reads the roll-up).
  usageProperties: jsonb('usage_properties').$type<string[]>().notNull().default([]),
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
    // scrypt$n=N,r=R,p=P$salt$hash (or scrypt$salt$hash, made with Node's defaults before parameters were stored)
    passwordHash: text('password_hash').notNull(),
    role: text('role', { enum: ADMIN_ROLES }).notNull().default('admin'),
    // Console sessions carry the version they were signed in at; a password change raises it,
    // which ends every session of this admin at their next request.
    sessionVersion: integer('session_version').notNull().default(1),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [uniqueIndex('admins_email').on(sql`lower(${t.email})`), check('admins_role_known', isOneOf(t.role, ADMIN_ROLES))],
);

/**
 * Console sessions, one per sign-in, named by the `sid` its signed cookie carries. A session
 * lasts 12 hours from its sign-in however often the cookie is renewed, and ends at sign-out, so
 * a copied cookie stops working then too. An admin's finished sessions are removed at their next
 * sign-in, and all of them with the admin.
 */
export const consoleSessions = pgTable(
  'console_sessions',
  {
    id: text('id').primaryKey(),
    adminId: text('admin_id')
      .notNull()
      .references(() => admins.id, { onDelete: 'cascade' }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
    endedAt: timestamp('ended_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [index('console_sessions_admin').on(t.adminId)],
);

/**
 * Console sign-in attempts, one row per attempt and scope ('email': the lower-cased email;
 * 'address': the client address), kept while they count (15 minutes) or hold a lock. Rows are
 * written before the password is checked, so parallel guesses count too; a success removes
 * its own. In the database, so every process sees the same counts.
 */
export const signInAttempts = pgTable(
  'sign_in_attempts',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    scope: text('scope', { enum: SIGN_IN_SCOPES }).notNull(),
    key: text('key').notNull(),
    at: timestamp('at', { withTimezone: true, mode: 'date' }).notNull(),
    // Set on the failure that reached the limit: the scope's key is refused until then.
    lockedUntil: timestamp('locked_until', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    index('sign_in_attempts_key').on(t.scope, t.key, t.at),
    index('sign_in_attempts_at').on(t.at),
    check('sign_in_attempts_scope_known', isOneOf(t.scope, SIGN_IN_SCOPES)),
  ],
);

export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    companyId: text('company_id').notNull(),
    key: text('key').notNull(),
    method: text('method').notNull(),
    path: text('path').notNull(),
    requestHash: text('request_hash').notNull(),
    status: text('status', { enum: IDEMPOTENCY_STATUSES }).notNull(),
    responseStatus: text('response_status'),
    responseBody: text('response_body'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    // The request running under the key: a token of its claim, and when it last showed it was
    // alive (service clock, as created_at).
    claimToken: text('claim_token'),
    aliveAt: timestamp('alive_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    uniqueIndex('idempotency_keys_pk').on(t.companyId, t.key),
    index('idempotency_keys_created').on(t.createdAt),
    check('idempotency_keys_status_known', isOneOf(t.status, IDEMPOTENCY_STATUSES)),
  ],
);
