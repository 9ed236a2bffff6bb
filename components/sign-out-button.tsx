'use client';
import { signOut } from 'next-auth/react';

export function SignOutButton() {
  return (
    <button type="button" onClick={() => signOut({ callbackUrl: '/console/sign-in' })} className="rounded border border-slate-300 px-3 py-1 hover:bg-slate-100">
      Sign out
    </button>
  );
}
