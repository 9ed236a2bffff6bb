import Link from 'next/link';
import { requireUser } from '@/lib/auth';
import { SignOutButton } from '@/components/sign-out-button';

export default async function ConsoleLayout({ children }: { children: React.ReactNode }) {
  const user = await requireUser();
  return (
    <div className="min-h-screen">
      <header className="border-b border-slate-200 bg-white">
        <div className="mx-auto flex max-w-6xl flex-wrap items-center justify-between gap-2 px-4 py-3">
          <div>
            <span className="font-semibold">{user.companyName}</span>
            <span className="ml-2 text-sm text-slate-600">{user.email}</span>
          </div>
          <nav aria-label="Console" className="flex flex-wrap items-center gap-4 text-sm">
            <Link href="/console" className="text-blue-800 hover:underline">Accounts</Link>
            <SignOutButton />
          </nav>
        </div>
      </header>
      <main className="mx-auto max-w-6xl px-4 py-6">{children}</main>
    </div>
  );
}
