import { requireUser } from '@/lib/console/next-auth';
import { SignOutButton } from '@/components/sign-out-button';
import { ConsoleNav } from '@/components/console/nav';

export default async function ConsoleLayout({ children }: { children: React.ReactNode }) {
  const user = await requireUser();
  return (
    <div className="min-h-screen">
      <a href="#main" className="sr-only rounded bg-white px-3 py-2 focus:not-sr-only focus:absolute focus:left-2 focus:top-2 focus:z-10">
        Skip to content
      </a>
      <header className="border-b border-slate-200 bg-white">
        <div className="mx-auto max-w-6xl px-4 py-3">
          <div className="flex flex-wrap items-center justify-between gap-2">
            <div className="min-w-0">
              <span className="font-semibold">{user.companyName}</span>
              <span className="ml-2 break-all text-sm text-slate-700">
                {user.email}
                {user.role === 'owner' ? ' (owner)' : ''}
              </span>
            </div>
            <SignOutButton />
          </div>
          <nav aria-label="Console" className="mt-2">
            <ConsoleNav />
          </nav>
        </div>
      </header>
      <main id="main" tabIndex={-1} className="mx-auto max-w-6xl px-4 py-6 focus:outline-none">
        {children}
      </main>
    </div>
  );
}
