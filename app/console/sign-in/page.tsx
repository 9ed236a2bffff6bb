import { SignInForm } from '@/components/sign-in-form';

export const metadata = { title: 'Sign in' };

export default async function SignIn({ searchParams }: { searchParams: Promise<{ callbackUrl?: string }> }) {
  const { callbackUrl } = await searchParams;
  const target = callbackUrl && callbackUrl.startsWith('/') ? callbackUrl : '/console';
  return (
    <main className="mx-auto mt-16 max-w-sm rounded-lg border border-slate-200 bg-white p-8 shadow-sm">
      <h1 className="text-xl font-semibold">Sign in to the billing console</h1>
      <SignInForm callbackUrl={target} />
    </main>
  );
}
