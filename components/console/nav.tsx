'use client';
import Link from 'next/link';
import { usePathname } from 'next/navigation';

const LINKS = [
  { href: '/console', label: 'Dashboard' },
  { href: '/console/accounts', label: 'Accounts' },
  { href: '/console/plans', label: 'Plans' },
  { href: '/console/events', label: 'Events' },
  { href: '/console/credits', label: 'Credits' },
  { href: '/console/portal', label: 'Portal' },
  { href: '/console/webhooks', label: 'Webhooks' },
  { href: '/console/api-keys', label: 'API keys' },
  { href: '/console/team', label: 'Team' },
];

/** The console's sections; the current one is marked for sight and for screen readers. */
export function ConsoleNav() {
  const path = usePathname();
  return (
    <ul className="flex flex-wrap gap-x-1 gap-y-1 text-sm">
      {LINKS.map((l) => {
        const current = l.href === '/console' ? path === '/console' : path === l.href || path.startsWith(`${l.href}/`);
        return (
          <li key={l.href}>
            <Link
              href={l.href}
              aria-current={current ? 'page' : undefined}
              className={`block rounded px-2.5 py-1.5 ${current ? 'bg-blue-800 font-medium text-white' : 'text-blue-900 hover:bg-slate-100 hover:underline'}`}
            >
              {l.label}
            </Link>
          </li>
        );
      })}
    </ul>
  );
}
