import { eventListQuery } from '../api/schemas/events';
import { ledgerQuery } from '../api/schemas/balances';
import { describeIssue } from '../api/zod-errors';
import type { Db } from '../db/client';
import { ApiError } from '../errors';
import { log } from '../log';
import { toUnits } from '../money';
import { getAccount } from '../billing/accounts/accounts';
import { listTransactions, type LedgerRow } from '../billing/balances/balances';
import { effectiveState, listEvents, type EventRow } from '../billing/events/events';
import { accountNames } from './queries';

/** Rows read per query: one page in memory at a time, whatever the number of rows exported. */
export const EXPORT_PAGE = 1000;

type Cell = string | number | boolean | null | undefined;
/** A cell written by someone else (a type, a description, metadata) rather than by us. */
type Text = { text: string | null };

/**
 * A spreadsheet runs a cell that starts with = + - @ as a formula, also after leading spaces,
 * tabs, line breaks, other control or invisible characters, which it drops on import (and a
 * full-width sign, which some read as the ASCII one): free text from the API that starts so, or
 * with a tab or carriage return, is written with a leading apostrophe so it is shown, never run.
 * Numbers and ids are ours and written as they are.
 */
const FORMULA_START = /^[\t\r]|^[\s\p{Cc}\p{Cf}]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]/u;

/** One CSV field per RFC 4180: quoted when it holds a comma, a quote or a line break. */
export function csvField(value: Cell | Text): string {
  let s: string;
  if (value !== null && typeof value === 'object') s = value.text === null ? '' : FORMULA_START.test(value.text) ? `'${value.text}` : value.text;
  else s = value === null || value === undefined ? '' : String(value);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function csvRow(values: (Cell | Text)[]): string {
  return `${values.map(csvField).join(',')}\r\n`;
}

/**
 * A CSV body read page by page as the client takes it (keyset pagination: each page starts after
 * the last id of the one before). `pull` runs only when the reader wants more, so a slow
 * download holds one page, and a cancelled one stops querying.
 */
export function streamCsv<T extends { id: string }>({
  header,
  nextPage,
  toRow,
  onError,
}: {
  header: string[];
  nextPage: (after: string | undefined) => Promise<{ items: T[]; hasMore: boolean }>;
  toRow: (item: T) => (Cell | Text)[];
  onError?: (err: unknown) => void;
}): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let after: string | undefined;
  let headerSent = false;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (!headerSent) {
          headerSent = true;
          controller.enqueue(encoder.encode(csvRow(header)));
          return;
        }
        try {
          const page = await nextPage(after);
          if (page.items.length) controller.enqueue(encoder.encode(page.items.map((item) => csvRow(toRow(item))).join('')));
          const last = page.items[page.items.length - 1];
          if (!page.hasMore || !last) controller.close();
          else after = last.id;
        } catch (err) {
          onError?.(err);
          controller.error(err);
        }
      },
    },
    { highWaterMark: 1 },
  );
}

function csvResponse(body: ReadableStream<Uint8Array>, filename: string): Response {
  return new Response(body, {
    headers: {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="${filename}"`,
      'cache-control': 'no-store',
    },
  });
}

function refusal(status: 400 | 404, message: string): Response {
  return new Response(`${message}\n`, { status, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' } });
}

const day = (at: Date) => at.toISOString().slice(0, 10);
const logFailure = (what: string) => (err: unknown) => log.error({ err }, `${what} export failed`);

/** `<input type="datetime-local">` gives "2026-01-02T03:04"; the console's times are UTC. */
export function localToIso(v: string | undefined): string | undefined {
  if (!v) return undefined;
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(v)) return `${v}:00Z`;
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/.test(v)) return `${v}Z`;
  return v;
}

/** The events explorer's filters as its form sends them (empty fields are no filter). */
export function eventFilters(params: URLSearchParams) {
  const get = (k: string) => params.get(k)?.trim() || undefined;
  return { account_id: get('account_id'), type: get('type'), state: get('state'), created_gte: get('created_gte'), created_lt: get('created_lt') };
}

export const EVENT_COLUMNS = ['id', 'created_at', 'account_id', 'account_name', 'type', 'state', 'cost_amount', 'cost_denomination', 'priced_by', 'gate_on_balance', 'idempotency_key', 'metadata', 'updated_at', 'expires_at'];

/**
 * The events of the signed-in admin's company that the explorer's filters select, newest first,
 * as CSV. An account id of another company is 404, as everywhere.
 */
export async function exportEvents({ db, companyId, params, now, pageSize = EXPORT_PAGE }: { db: Db; companyId: string; params: URLSearchParams; now: Date; pageSize?: number }): Promise<Response> {
  const f = eventFilters(params);
  const parsed = eventListQuery.safeParse({
    limit: pageSize,
    ...(f.account_id && { account_id: f.account_id }),
    ...(f.type && { type: f.type }),
    ...(f.state && { state: f.state }),
    ...(f.created_gte && { created_gte: localToIso(f.created_gte) }),
    ...(f.created_lt && { created_lt: localToIso(f.created_lt) }),
  });
  if (!parsed.success) return refusal(400, describeIssue(parsed.error.issues[0]).message);
  if (f.account_id) {
    const own = await getAccount({ db, companyId, accountId: f.account_id }).catch((err: unknown) => (err instanceof ApiError && err.status === 404 ? null : Promise.reject(err)));
    if (!own) return refusal(404, 'No such account.');
  }
  const q = parsed.data;
  const body = streamCsv<EventRow & { accountName: string }>({
    header: EVENT_COLUMNS,
    nextPage: async (after) => {
      const page = await listEvents({ db, companyId, q: { ...q, starting_after: after }, now });
      const names = await accountNames({ db, companyId, ids: page.items.map((e) => e.accountId) });
      return { items: page.items.map((e) => ({ ...e, accountName: names.get(e.accountId) ?? '' })), hasMore: page.hasMore };
    },
    toRow: (e) => {
      const state = effectiveState(e, now);
      return [
        e.id,
        e.createdAt.toISOString(),
        e.accountId,
        { text: e.accountName },
        { text: e.type },
        state,
        e.costAmount === null ? null : toUnits(e.costAmount),
        { text: e.costDenomination },
        e.pricedBy,
        e.gateOnBalance,
        { text: e.idempotencyKey },
        { text: JSON.stringify(e.metadata ?? {}) },
        e.updatedAt?.toISOString() ?? null,
        state === 'pending' && e.expiresAt ? e.expiresAt.toISOString() : null,
      ];
    },
    onError: logFailure('events'),
  });
  return csvResponse(body, `events-${day(now)}.csv`);
}

export const LEDGER_COLUMNS = ['id', 'created_at', 'denomination', 'type', 'description', 'amount', 'starting_balance', 'ending_balance', 'event_id', 'charge_id'];

/** An account's ledger (one denomination with `denomination`), newest first, as CSV. */
export async function exportLedger({
  db,
  companyId,
  accountId,
  params,
  now,
  pageSize = EXPORT_PAGE,
}: {
  db: Db;
  companyId: string;
  accountId: string;
  params: URLSearchParams;
  now: Date;
  pageSize?: number;
}): Promise<Response> {
  const account = await getAccount({ db, companyId, accountId }).catch((err: unknown) => (err instanceof ApiError && err.status === 404 ? null : Promise.reject(err)));
  if (!account) return refusal(404, 'No such account.');
  const denomination = params.get('denomination')?.trim() || undefined;
  const parsed = ledgerQuery.safeParse({ limit: pageSize, ...(denomination && { denomination }) });
  if (!parsed.success) return refusal(400, describeIssue(parsed.error.issues[0]).message);
  const body = streamCsv<LedgerRow>({
    header: LEDGER_COLUMNS,
    nextPage: (after) => listTransactions({ db, accountId: account.id, denomination: parsed.data.denomination, page: { limit: parsed.data.limit, starting_after: after } }),
    toRow: (t) => [
      t.id,
      t.createdAt.toISOString(),
      { text: t.denomination },
      t.type,
      { text: t.description },
      toUnits(t.amount),
      toUnits(t.startingBalance),
      toUnits(t.endingBalance),
      t.eventId,
      t.chargeId,
    ],
    onError: logFailure('ledger'),
  });
  return csvResponse(body, `ledger-${account.id}-${day(now)}.csv`);
}
