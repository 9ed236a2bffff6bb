import type { NextAuthOptions } from 'next-auth';
import { getServerSession } from 'next-auth';
import CredentialsProvider from 'next-auth/providers/credentials';
import { redirect } from 'next/navigation';
import { eq, sql } from 'drizzle-orm';
import { getDb } from './db/client';
import { admins, companies } from './db/schema';
import { verifyPassword } from './crypto';
import { consoleSessionSecret } from './config';

export type ConsoleUser = { id: string; email: string; companyId: string; companyName: string; role: string };

let options: NextAuthOptions | undefined;

export function authOptions(): NextAuthOptions {
  if (options) return options;
  options = {
    secret: consoleSessionSecret(),
    session: { strategy: 'jwt', maxAge: 12 * 60 * 60 },
    pages: { signIn: '/console/sign-in' },
    providers: [
      CredentialsProvider({
        name: 'Email and password',
        credentials: { email: { label: 'Email', type: 'email' }, password: { label: 'Password', type: 'password' } },
        async authorize(credentials) {
          if (!credentials?.email || !credentials.password) return null;
          const db = await getDb();
          const [row] = await db
            .select({ admin: admins, companyName: companies.name })
            .from(admins)
            .innerJoin(companies, eq(companies.id, admins.companyId))
            .where(eq(sql`lower(${admins.email})`, credentials.email.trim().toLowerCase()));
          if (!row || !verifyPassword(credentials.password, row.admin.passwordHash)) return null;
          return { id: row.admin.id, email: row.admin.email, name: row.companyName, companyId: row.admin.companyId, role: row.admin.role };
        },
      }),
    ],
    callbacks: {
      async jwt({ token, user }) {
        if (user) {
          const u = user as unknown as { companyId: string; role: string; name: string };
          token.companyId = u.companyId;
          token.role = u.role;
          token.companyName = u.name;
        }
        return token;
      },
      async session({ session, token }) {
        (session as unknown as { user: ConsoleUser }).user = {
          id: token.sub ?? '',
          email: token.email ?? '',
          companyId: String(token.companyId),
          companyName: String(token.companyName),
          role: String(token.role),
        };
        return session;
      },
    },
  };
  return options;
}

/** The signed-in console user, or a redirect to the sign-in page. */
export async function requireUser(): Promise<ConsoleUser> {
  const session = (await getServerSession(authOptions())) as { user?: ConsoleUser } | null;
  if (!session?.user?.companyId) redirect('/console/sign-in');
  return session.user;
}
