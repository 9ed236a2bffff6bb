import { and, eq, isNull } from 'drizzle-orm';
import { isUniqueViolation, type Db } from '../../db/client';
import { admins, apiKeys, companies } from '../../db/schema';
import { encrypt, hashPassword, sha256 } from '../../crypto';
import { newId, newSecret } from '../../ids';
import { now } from '../../clock';
import { conflict, invalid, notFound } from '../../errors';
import { isLiveKey, processorIsStandIn } from '../../processor/stripe';
import { keysetPage, type PageQuery } from '../../db/keyset';
import { unitsOut } from '../../money';
import type { StoredPortalTopup } from '../../db/schema';
import { declareUsageProperties } from '../../db/usage-totals';

export type Company = typeof companies.$inferSelect;
export type ApiKey = typeof apiKeys.$inferSelect;

export type CompanyInput = {
  name: string;
  email: string;
  processor_key?: string;
  processor_publishable_key?: string;
  password?: string;
};

export function serializeCompany(c: Company) {
  return {
    id: c.id,
    name: c.name,
    email: c.email,
    processor_configured: Boolean(c.processorKeyEnc),
    processor_publishable_key: c.processorPublishableKey,
    portal_topups: c.portalTopups.map((t) => ({ denomination: t.denomination, amount_to_deposit: unitsOut(t.amount_to_deposit), amount_to_charge: t.amount_to_charge })),
    usage_properties: c.usageProperties,
    created_at: c.createdAt.toISOString(),
  };
}

/**
 * Changes the company's own settings: the top-up packages its customer portal offers (replaced as
 * a whole; [] offers none; a package taken away can no longer be bought, even from a page loaded
 * before), and the event properties its usage is rolled up by (replaced as a whole; see
 * declareUsageProperties for the history of a property declared now).
 */
export async function updateCompany({
  db,
  companyId,
  input,
}: {
  db: Db;
  companyId: string;
  input: { portal_topups?: StoredPortalTopup[]; usage_properties?: string[] };
}): Promise<Company> {
  return db.transaction(async (tx) => {
    const [before] = await tx.select().from(companies).where(eq(companies.id, companyId)).for('update');
    if (!before) throw notFound('company', 'company_id');
    const set: Partial<Company> = {};
    if (input.portal_topups !== undefined) set.portalTopups = input.portal_topups;
    if (input.usage_properties !== undefined) {
      set.usageProperties = input.usage_properties;
      await declareUsageProperties(tx, companyId, before.usageProperties, input.usage_properties);
    }
    const [row] = await tx.update(companies).set(set).where(eq(companies.id, companyId)).returning();
    return row;
  });
}

export function serializeApiKey(k: ApiKey) {
  return {
    id: k.id,
    last4: k.last4,
    created_at: k.createdAt.toISOString(),
    last_used_at: k.lastUsedAt?.toISOString() ?? null,
    revoked_at: k.revokedAt?.toISOString() ?? null,
  };
}

function newApiKeyRow(companyId: string, at: Date) {
  const secret = newSecret('sk_', 24);
  const row = { id: newId('key'), companyId, keyHash: sha256(secret), last4: secret.slice(-4), createdAt: at };
  return { secret, row };
}

/** Live keys are for Stripe's own API only (see processorIsStandIn). */
export function refuseLiveKeysOffStripe(input: CompanyInput): void {
  if (!processorIsStandIn()) return;
  for (const param of ['processor_key', 'processor_publishable_key'] as const) {
    const key = input[param];
    if (key && isLiveKey(key)) {
      throw invalid(
        `${param} is a live key, and this service runs against a stand-in payment processor (STRIPE_API_URL is set), not Stripe's own API: register a test key (${param === 'processor_key' ? 'sk_test_... or rk_test_...' : 'pk_test_...'}), or run the service against Stripe to take live payments.`,
        param,
      );
    }
  }
}

/**
 * Registers a company with its first API key (returned once) and, with a password, its console
 * owner. `passwordHash` is the password's hash when the caller made it beforehand (`hashOwnerPassword`).
 */
export async function createCompany({ db, input, passwordHash: hashed }: { db: Db; input: CompanyInput; passwordHash?: string | null }) {
  refuseLiveKeysOffStripe(input);
  const at = now();
  const company: Company = {
    id: newId('c'),
    name: input.name,
    email: input.email,
    processorKeyEnc: input.processor_key ? encrypt(input.processor_key) : null,
    processorPublishableKey: input.processor_publishable_key ?? null,
    portalTopups: [],
    usageProperties: [],
    createdAt: at,
  };
  const { secret, row } = newApiKeyRow(company.id, at);
  const passwordHash = hashed !== undefined ? hashed : await hashOwnerPassword(input);
  try {
    await db.transaction(async (tx) => {
      await tx.insert(companies).values(company);
      await tx.insert(apiKeys).values(row);
      if (passwordHash) {
        await tx.insert(admins).values({
          id: newId('u'),
          companyId: company.id,
          email: input.email,
          passwordHash,
          role: 'owner',
          createdAt: at,
        });
      }
    });
  } catch (err) {
    // Console sign-in is by email, so an owner's email belongs to one company only.
    if (isUniqueViolation(err)) throw conflict('A console admin with this email already exists: register the company with another email, or without a password.', 'email');
    throw err;
  }
  return { company, apiKey: secret, apiKeyId: row.id };
}

/** The console owner's password hash of a registration, or null without a password; refuses what createCompany refuses first. */
export async function hashOwnerPassword(input: CompanyInput): Promise<string | null> {
  refuseLiveKeysOffStripe(input);
  return input.password ? hashPassword(input.password) : null;
}

export async function issueApiKey({ db, companyId }: { db: Db; companyId: string }) {
  const { secret, row } = newApiKeyRow(companyId, now());
  const [created] = await db.insert(apiKeys).values(row).returning();
  return { key: created, secret };
}

export async function revokeApiKey({ db, companyId, keyId }: { db: Db; companyId: string; keyId: string }) {
  const [revoked] = await db
    .update(apiKeys)
    .set({ revokedAt: now() })
    .where(and(eq(apiKeys.id, keyId), eq(apiKeys.companyId, companyId), isNull(apiKeys.revokedAt)))
    .returning();
  if (revoked) return revoked;
  const [existing] = await db.select().from(apiKeys).where(and(eq(apiKeys.id, keyId), eq(apiKeys.companyId, companyId)));
  if (!existing) throw notFound('API key', 'key_id');
  return existing;
}

export async function listApiKeys({ db, companyId, page }: { db: Db; companyId: string; page: PageQuery }) {
  return keysetPage(db.select().from(apiKeys).$dynamic(), apiKeys.id, page, eq(apiKeys.companyId, companyId));
}

export async function getCompany({ db, companyId }: { db: Db; companyId: string }) {
  const [company] = await db.select().from(companies).where(eq(companies.id, companyId));
  if (!company) throw notFound('company', 'company_id');
  return company;
}
