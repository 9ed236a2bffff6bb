import { SignInForm } from '@/components/sign-in-form';

export const metadata = { title: 'Sign in' };

const NOTICES: Record<string, string> = {
  'password-changed': 'Your password is changed and your other sessions have ended. Sign in with the new password.',
};

export default async function SignIn({ searchParams }: { searchParams: Promise<{ callbackUrl?: string; notice?: string }> }) {
  const { callbackUrl, notice } = await searchParams;
  // Only paths of this site: `//host` and `/\host` would leave it.
  const target = callbackUrl && /^\/(?![/\\])/.test(callbackUrl) ? callbackUrl : '/console';
  const message = notice && Object.hasOwn(NOTICES, notice) ? NOTICES[notice] : undefined;
  return (
    <main className="mx-auto mt-16 max-w-sm rounded-lg border border-slate-200 bg-white p-8 shadow-sm">
      <h1 className="text-xl font-semibold">Sign in to the billing console</h1>
      {message && <p role="status" className="mt-4 rounded border border-green-300 bg-green-50 p-3 text-sm text-green-900">{message}</p>}
      <SignInForm callbackUrl={target} />
    </main>
  );
}
