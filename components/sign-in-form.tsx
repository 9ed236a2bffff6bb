'use client';
import { signIn } from 'next-auth/react';
import { useState } from 'react';

// Answered as SIGN_IN_LOCKED (lib/auth.ts); the limits of lib/console/sign-in.ts, in words.
const LOCKED =
  'Too many failed sign-ins for this email or from your network: sign-in is paused for 15 minutes, whatever the password. Try again later.';

// Answered as SIGN_IN_BUSY (503 with Retry-After): nothing was checked or counted.
const busyMessage = (seconds: number) => `Sign-in is busy right now and did not check your password. Try again in ${seconds} second${seconds === 1 ? '' : 's'}.`;

export function SignInForm({ callbackUrl }: { callbackUrl: string }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  async function onSubmit(e: React.FormEvent<HTMLFormElement>) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const form = new FormData(e.currentTarget);
    const res = await signIn('credentials', {
      email: String(form.get('email')),
      password: String(form.get('password')),
      redirect: false,
      callbackUrl,
    });
    setBusy(false);
    if (res?.error === 'SignInLocked') setError(LOCKED);
    else if (res?.error?.startsWith('SignInBusy')) setError(busyMessage(Number(res.error.split(':')[1]) || 5));
    else if (!res || res.error) setError('That email and password do not match an admin of any company.');
    else window.location.assign(res.url ?? callbackUrl);
  }
  return (
    <form onSubmit={onSubmit} className="mt-6 space-y-4" noValidate>
      <div>
        <label htmlFor="email" className="block text-sm font-medium">Email</label>
        <input id="email" name="email" type="email" autoComplete="username" required
          className="mt-1 w-full rounded border border-slate-400 px-3 py-2" />
      </div>
      <div>
        <label htmlFor="password" className="block text-sm font-medium">Password</label>
        <input id="password" name="password" type="password" autoComplete="current-password" required
          className="mt-1 w-full rounded border border-slate-400 px-3 py-2" />
      </div>
      {error && <p role="alert" className="rounded bg-red-50 p-3 text-sm text-red-800">{error}</p>}
      <button type="submit" disabled={busy}
        className="w-full rounded bg-blue-800 px-4 py-2 font-medium text-white hover:bg-blue-900 disabled:opacity-60">
        {busy ? 'Signing in…' : 'Sign in'}
      </button>
    </form>
  );
}
