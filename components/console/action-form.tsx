'use client';
import { createContext, useActionState, useContext, useEffect, useId, useRef, useState, startTransition } from 'react';
import Link from 'next/link';
import type { FieldError, FormState } from '@/lib/console/forms';

type Ctx = { state: FormState; formId: string; claim: (name: string) => void };
const FormCtx = createContext<Ctx>({ state: { status: 'idle' }, formId: 'f', claim: () => {} });

export type FormAction = (state: FormState, data: FormData) => Promise<FormState>;

const button = {
  primary: 'rounded bg-blue-800 px-4 py-2 font-medium text-white hover:bg-blue-900 disabled:opacity-60',
  secondary: 'rounded border border-slate-400 bg-white px-3 py-1.5 text-slate-900 hover:bg-slate-100 disabled:opacity-60',
  danger: 'rounded border border-red-700 bg-white px-3 py-1.5 text-red-800 hover:bg-red-50 disabled:opacity-60',
};

/** "balances[0].amount must be at least 0" shown under the Amount field reads "Must be at least 0." */
function fieldMessage(e: FieldError): string {
  let m = e.message;
  if (e.param && m.startsWith(`${e.param} `)) m = m.slice(e.param.length + 1);
  m = m.charAt(0).toUpperCase() + m.slice(1);
  return /[.!?]$/.test(m) ? m : `${m}.`;
}

/**
 * A form whose server action answers with a FormState: errors appear next to their fields
 * (matched by the API's `param` path), others above the button; a success message is announced.
 * Submitting goes through a transition without React's automatic reset, so a refused form
 * keeps what the person typed; it is cleared only after a success (`resetOnSuccess`).
 */
export function ActionForm({
  action,
  submitLabel,
  pendingLabel,
  children,
  className = 'space-y-4',
  variant = 'primary',
  resetOnSuccess = true,
  confirm,
  label,
}: {
  action: FormAction;
  submitLabel: string;
  pendingLabel?: string;
  children?: React.ReactNode;
  className?: string;
  variant?: keyof typeof button;
  resetOnSuccess?: boolean;
  /** Asks once more before submitting: the text of the confirming button. */
  confirm?: string;
  /** Accessible name of the form. */
  label?: string;
}) {
  const [state, formAction, pending] = useActionState(action, { status: 'idle' } as FormState);
  const formId = useId();
  const formRef = useRef<HTMLFormElement>(null);
  const summaryRef = useRef<HTMLDivElement>(null);
  const confirmRef = useRef<HTMLButtonElement>(null);
  const [claimed] = useState(() => new Set<string>());
  const [confirming, setConfirming] = useState(false);
  // A confirmation answers what was in the form when it was asked for: an edit since withdraws it.
  const [edited, setEdited] = useState<FormState | null>(null);
  const confirmation = state.status === 'ok' && edited !== state ? state.confirmation : undefined;
  // Until React has hydrated, a click would submit the form natively (a GET of this page) and
  // be lost: the buttons wait, briefly disabled.
  const [ready, setReady] = useState(false);
  useEffect(() => setReady(true), []);

  useEffect(() => {
    if (state.status === 'ok' && resetOnSuccess) formRef.current?.reset();
    if (state.status === 'error') {
      // Take the person to the first field that needs fixing, or to the message.
      const first = formRef.current?.querySelector<HTMLElement>('[aria-invalid="true"]');
      (first ?? summaryRef.current)?.focus();
    }
  }, [state, resetOnSuccess]);
  useEffect(() => {
    if (confirming) confirmRef.current?.focus();
  }, [confirming]);

  const unclaimed = (state.errors ?? []).filter((e) => !e.param || !claimed.has(e.param));
  const fieldCount = (state.errors ?? []).length - unclaimed.length;

  function submit(e: React.FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    setConfirming(false);
    startTransition(() => formAction(data));
  }

  return (
    <form ref={formRef} onSubmit={submit} onChange={() => setEdited(state)} noValidate className={`relative ${className}`} aria-label={label}>
      <FormCtx.Provider value={{ state, formId, claim: (n) => claimed.add(n) }}>
        {children}
        {confirmation && <input type="hidden" name={confirmation.name} value={confirmation.value} />}
        {state.status === 'error' && (
          <div ref={summaryRef} tabIndex={-1} role="alert" className="rounded border border-red-300 bg-red-50 p-3 text-sm text-red-900">
            {unclaimed.map((e, i) => (
              <p key={i}>{fieldMessage(e)}</p>
            ))}
            {fieldCount > 0 && <p>{fieldCount === 1 ? 'Please correct the marked field.' : 'Please correct the marked fields.'}</p>}
          </div>
        )}
        {/* Always present, so screen readers announce the message when it appears. */}
        <p role="status" className={state.status === 'ok' && state.message ? 'rounded border border-green-300 bg-green-50 p-3 text-sm text-green-900' : 'sr-only'}>
          {state.status === 'ok' ? state.message : ''}
        </p>
        {state.status === 'ok' && state.secret && <SecretBox label={state.secret.label} value={state.secret.value} />}
        {state.status === 'ok' && state.link && (
          <p>
            <Link href={state.link.href} className="text-blue-800 underline hover:text-blue-950">
              {state.link.label}
            </Link>
          </p>
        )}
        <div className="flex flex-wrap items-center gap-2">
          {confirm && !confirming ? (
            // Keys: a distinct element, or the click that reveals the confirming submit button would submit it.
            <button key="ask" type="button" className={button[variant]} onClick={() => setConfirming(true)} disabled={pending || !ready}>
              {submitLabel}
            </button>
          ) : confirm ? (
            <>
              <button key="confirm" ref={confirmRef} type="submit" className={button.danger} disabled={pending}>
                {pending ? (pendingLabel ?? 'Working…') : confirm}
              </button>
              <button key="cancel" type="button" className={button.secondary} onClick={() => setConfirming(false)}>
                Cancel
              </button>
            </>
          ) : (
            <button key="submit" type="submit" className={button[variant]} disabled={pending || !ready}>
              {pending ? (pendingLabel ?? 'Working…') : (confirmation?.label ?? submitLabel)}
            </button>
          )}
        </div>
      </FormCtx.Provider>
    </form>
  );
}

/** A value shown once (API key, link, signing secret), with a copy button. */
export function SecretBox({ label, value }: { label: string; value: string }) {
  const id = useId();
  const [copied, setCopied] = useState(false);
  return (
    <div className="rounded border border-amber-400 bg-amber-50 p-3 text-sm">
      <label htmlFor={id} className="block font-medium text-amber-950">
        {label}
      </label>
      <p className="text-amber-950">Copy it now: it is shown only once.</p>
      <div className="mt-2 flex flex-wrap gap-2">
        <input id={id} readOnly value={value} onFocus={(e) => e.currentTarget.select()} className="min-w-0 flex-1 rounded border border-slate-400 bg-white px-2 py-1 font-mono text-xs" />
        <button
          type="button"
          className={button.secondary}
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(value);
              setCopied(true);
            } catch {
              setCopied(false);
            }
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
    </div>
  );
}

/** A field's hint and error, with the ids its control's aria-describedby names. */
function FieldNotes({ id, hint, error, indent }: { id: string; hint?: React.ReactNode; error?: string | null; indent?: boolean }) {
  const pad = indent ? 'ml-6 ' : '';
  return (
    <>
      {hint && (
        <p id={`${id}-hint`} className={`${pad}mt-1 text-xs text-slate-700`}>
          {hint}
        </p>
      )}
      {error && (
        <p id={`${id}-error`} className={`${pad}mt-1 text-sm text-red-800`}>
          {error}
        </p>
      )}
    </>
  );
}

function useField(name: string) {
  const { state, formId, claim } = useContext(FormCtx);
  claim(name);
  const id = `${formId}-${name.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const error = state.status === 'error' ? state.errors?.find((e) => e.param === name) : undefined;
  return { id, error: error ? fieldMessage(error) : null };
}

const inputClass = 'mt-1 block min-h-[2.625rem] w-full rounded border border-slate-500 bg-white px-3 py-2 aria-[invalid=true]:border-red-700';

type InputProps = Omit<React.InputHTMLAttributes<HTMLInputElement>, 'name' | 'id'> & { name: string; label: string; hint?: React.ReactNode };

/** A labelled input; its error (if any) is tied to it with aria-describedby. */
export function Field({ name, label, hint, className, ...rest }: InputProps) {
  const { id, error } = useField(name);
  const describedBy = [hint ? `${id}-hint` : null, error ? `${id}-error` : null].filter(Boolean).join(' ') || undefined;
  return (
    <div className={className}>
      <label htmlFor={id} className="block text-sm font-medium">
        {label}
      </label>
      <input id={id} name={name} aria-invalid={error ? true : undefined} aria-describedby={describedBy} className={inputClass} {...rest} />
      <FieldNotes id={id} hint={hint} error={error} />
    </div>
  );
}

export function SelectField({
  name,
  label,
  hint,
  options,
  className,
  ...rest
}: Omit<React.SelectHTMLAttributes<HTMLSelectElement>, 'name' | 'id'> & { name: string; label: string; hint?: React.ReactNode; options: { value: string; label: string }[] }) {
  const { id, error } = useField(name);
  const describedBy = [hint ? `${id}-hint` : null, error ? `${id}-error` : null].filter(Boolean).join(' ') || undefined;
  return (
    <div className={className}>
      <label htmlFor={id} className="block text-sm font-medium">
        {label}
      </label>
      <select id={id} name={name} aria-invalid={error ? true : undefined} aria-describedby={describedBy} className={inputClass} {...rest}>
        {options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
      <FieldNotes id={id} hint={hint} error={error} />
    </div>
  );
}

export function CheckboxField({ name, label, hint, className, ...rest }: InputProps) {
  const { id, error } = useField(name);
  const describedBy = [hint ? `${id}-hint` : null, error ? `${id}-error` : null].filter(Boolean).join(' ') || undefined;
  return (
    <div className={className}>
      <div className="flex items-start gap-2">
        <input type="checkbox" id={id} name={name} aria-invalid={error ? true : undefined} aria-describedby={describedBy} className="mt-1 h-4 w-4" {...rest} />
        <label htmlFor={id} className="text-sm font-medium">
          {label}
        </label>
      </div>
      <FieldNotes id={id} hint={hint} error={error} indent />
    </div>
  );
}
