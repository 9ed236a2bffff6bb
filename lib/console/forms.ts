import { z } from 'zod';
import { revalidatePath } from 'next/cache';
import { notFound, redirect, unstable_rethrow } from 'next/navigation';
import { ApiError } from '../errors';
import { log } from '../log';
import { requireUser, type ConsoleUser } from './next-auth';
import { getDb, type Db } from '../db/client';
import { getCompany } from '../billing/companies/companies';
import { describeIssue, parseOptions } from '../api/zod-errors';
import { isStorable, unstorableMessage } from '../api/input';

export type FieldError = { param: string | null; message: string };

/** What a console form's server action answers; the form shows it next to the fields. */
export type FormState = {
  status: 'idle' | 'ok' | 'error';
  message?: string;
  errors?: FieldError[];
  /** Shown once and never stored in readable form: a new API key, a collector link, a signing secret. */
  secret?: { label: string; value: string };
  /** Where to go next, e.g. the record just created. */
  link?: { href: string; label: string };
  /**
   * The message is what the submission would do, and nothing was done: submitting again with
   * this hidden field (under a button with this label) confirms it.
   */
  confirmation?: { name: string; value: string; label: string };
  /** Differs on every answer, so the form can tell two equal answers apart. */
  at?: number;
};

export const idle: FormState = { status: 'idle' };

export class FormInvalid extends Error {
  constructor(readonly errors: FieldError[]) {
    super(errors[0]?.message ?? 'Invalid input.');
  }
}

const UNSAFE_NAMES = new Set(['__proto__', 'constructor', 'prototype']);
/**
 * Rows a list field may number, and how deep a name may go: no console form comes near either.
 * An index is an array's length, and closing up the holes walks all of it: `rows[4294967294]`
 * would hold the server's thread for minutes.
 */
export const MAX_FORM_ROWS = 1000;
const MAX_NAME_DEPTH = 6;

/**
 * FormData as the object the API would receive: `balances[0].amount` style names become nested
 * arrays and objects (the same paths the API's error `param` uses, so errors land on the field
 * that caused them). Empty fields are left out, as an API caller would leave them out.
 */
export function formValues(fd: FormData): Record<string, unknown> {
  refuseUnstorable(fd);
  const out: Record<string, unknown> = {};
  for (const [key, raw] of fd.entries()) {
    if (typeof raw !== 'string' || key.startsWith('$ACTION')) continue;
    const value = raw.trim();
    if (value === '') continue;
    const path = key.match(/[^.[\]]+/g) ?? [];
    // A name that would reach an object's prototype (`__proto__.x`) is no field of any form.
    if (path.some((part) => UNSAFE_NAMES.has(part))) continue;
    if (path.length > MAX_NAME_DEPTH || path.some((part) => /^\d+$/.test(part) && (part.length > 4 || Number(part) >= MAX_FORM_ROWS))) {
      throw new FormInvalid([{ param: key, message: `No form has this field: lists hold at most ${MAX_FORM_ROWS} rows.` }]);
    }
    let node: Record<string, unknown> | unknown[] = out;
    path.forEach((part, i) => {
      const last = i === path.length - 1;
      const index = /^\d+$/.test(part) ? Number(part) : part;
      const container = node as Record<string | number, unknown>;
      if (last) {
        container[index] = value;
      } else {
        // Only the form's own fields: never an inherited member (`toString.x`).
        if (!Object.hasOwn(container, index)) container[index] = /^\d+$/.test(path[i + 1]) ? [] : {};
        node = container[index] as Record<string, unknown>;
      }
    });
  }
  // Rows removed from the middle of a list leave holes: close them up.
  const compact = (v: unknown): unknown =>
    Array.isArray(v) ? v.filter((x) => x !== undefined).map(compact) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, compact(x)])) : v;
  return compact(out) as Record<string, unknown>;
}

/**
 * Parses with the API's own schema; every issue is reported, each on its field. Fields the
 * console asks for in dollars (converted to the API's cents before parsing) are named in
 * `dollars`, so their errors speak of dollars, not of the cents the person never typed.
 */
export function parseWith<T>(schema: z.ZodType<T>, value: unknown, prefix: PropertyKey[] = [], dollars: RegExp | null = null): T {
  const result = schema.safeParse(value, parseOptions);
  if (result.success) return result.data;
  throw new FormInvalid(
    result.error.issues.map((issue) => {
      const e = describeIssue(issue, prefix);
      if (dollars && e.param && dollars.test(e.param)) return { param: e.param, message: 'Enter a dollar amount such as 10 or 9.99 (not negative).' };
      return e;
    }),
  );
}

/**
 * Runs a form's work and turns what it throws into something the form can show: a schema
 * failure or an ApiError becomes field errors; Next's redirects and not-found pass through.
 */
async function act(work: () => Promise<Omit<FormState, 'status'> | string | void>): Promise<FormState> {
  try {
    const done = await work();
    const extra = typeof done === 'string' ? { message: done } : (done ?? {});
    return { status: 'ok', ...extra, at: Date.now() };
  } catch (err) {
    unstable_rethrow(err);
    if (err instanceof FormInvalid) return { status: 'error', errors: err.errors, at: Date.now() };
    if (err instanceof ApiError) return { status: 'error', errors: [{ param: err.param, message: err.message }], at: Date.now() };
    log.error({ err }, 'console action failed');
    return { status: 'error', errors: [{ param: null, message: 'Something went wrong on our side. Reload the page to see what was saved, then try again.' }], at: Date.now() };
  }
}

/** What a form's action hands its work: the signed-in admin, scoped to their company. */
export type ActionContext<I> = {
  user: ConsoleUser;
  /** Every record the action reads or writes belongs to this company. */
  companyId: string;
  db: Db;
  /** The signed-in company's row, read once when asked for. */
  company: () => ReturnType<typeof getCompany>;
  /** The form, read and parsed by the action's schema. */
  input: I;
};

/** What the work answers: shown on the form; `redirect` goes to another page once it succeeded. */
export type ActionOutcome = (Omit<FormState, 'status' | 'at'> & { redirect?: string }) | string | void;

/**
 * How an action reads its form: a zod schema parsed from `formValues`, a function that shapes
 * the fields and parses them itself (dollars, repeated rows, untrimmed passwords), or null for a
 * form without fields (a button).
 */
export type FormSchema<I> = z.ZodType<I> | ((fd: FormData) => I) | null;

type ActionOptions<A extends unknown[]> = {
  /** The pages that show what the action changed, refreshed once it has. */
  revalidate?: string | ((...ids: A) => string | string[]);
};

/**
 * A console form's server action. Every action first requires a signed-in admin (the sign-in
 * page otherwise), refuses a form holding what cannot be stored (each field named) before
 * anything is read, parses the form with its schema, then runs the work with the admin's
 * company; what the work throws becomes the form's errors (see act). Once the work is done the
 * pages it changed are refreshed, unless it only asked for a confirmation (nothing was done).
 * The ids a page binds (`action.bind(null, accountId)`) come before the form state and data.
 */
export function consoleAction<I, A extends unknown[] = []>(
  schema: FormSchema<I>,
  work: (ctx: ActionContext<I>, ...ids: A) => Promise<ActionOutcome>,
  options: ActionOptions<A> = {},
): (...args: [...A, FormState, FormData]) => Promise<FormState> {
  return async (...args) => {
    const fd = args[args.length - 1] as FormData;
    const ids = args.slice(0, -2) as unknown as A;
    let to: string | undefined;
    const state = await act(async () => {
      const user = await requireUser();
      refuseUnstorable(fd);
      const input = (schema === null ? undefined : schema instanceof z.ZodType ? parseWith(schema, formValues(fd)) : schema(fd)) as I;
      const db = await getDb();
      let company: ReturnType<typeof getCompany> | undefined;
      const done = await work({ user, companyId: user.companyId, db, company: () => (company ??= getCompany({ db, companyId: user.companyId })), input }, ...ids);
      const outcome = typeof done === 'string' ? { message: done } : (done ?? {});
      if (!outcome.confirmation && options.revalidate) {
        const paths = typeof options.revalidate === 'string' ? options.revalidate : options.revalidate(...ids);
        for (const path of [paths].flat()) revalidatePath(path);
      }
      const { redirect: next, ...shown } = outcome;
      to = next;
      return shown;
    });
    if (state.status === 'ok' && to) redirect(to);
    return state;
  };
}

/** A domain read that may be another company's id: show the not-found page instead. */
export async function orNotFound<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof ApiError && err.type === 'not_found') notFound();
    throw err;
  }
}

/**
 * A field holding what PostgreSQL cannot store (NUL, an unpaired surrogate) is refused on that
 * field, as the API refuses it (lib/api/input.ts), before anything is parsed or stored.
 */
function refusal(name: string): FieldError {
  const param = isStorable(name) ? name : null;
  return { param, message: unstorableMessage(param ?? 'A field name') };
}

/** Refuses the whole form, each bad field named, when any field holds what cannot be stored. */
export function refuseUnstorable(fd: FormData): void {
  const refused: FieldError[] = [];
  for (const [key, raw] of fd.entries()) {
    if (typeof raw === 'string' && !(isStorable(key) && isStorable(raw))) refused.push(refusal(key));
  }
  if (refused.length) throw new FormInvalid(refused);
}

/** A single string field from a form, as typed (passwords); '' when missing. */
export function rawField(fd: FormData, name: string): string {
  const v = fd.get(name);
  if (typeof v !== 'string') return '';
  if (!isStorable(v)) throw new FormInvalid([refusal(name)]);
  return v;
}

/** Every value of a repeated field (checkboxes), as sent. */
export function fieldValues(fd: FormData, name: string): string[] {
  const values = fd.getAll(name).filter((v): v is string => typeof v === 'string');
  if (!values.every(isStorable)) throw new FormInvalid([refusal(name)]);
  return values;
}

/** A single string field from a form, trimmed; '' when missing. */
export function field(fd: FormData, name: string): string {
  return rawField(fd, name).trim();
}
