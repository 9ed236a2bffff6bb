import type { NextAuthOptions } from 'next-auth';
import { getServerSession } from 'next-auth';
import CredentialsProvider from 'next-auth/providers/credentials';
import { redirect } from 'next/navigation';
import { eq } from 'drizzle-orm';
import { getDb, type Db } from './db/client';
import { admins, companies } from './db/schema';
import { consoleSessionSecret } from './config';
import { attemptSignIn } from './console/sign-in';
import { clientAddress } from './net/client-address';

export type ConsoleUser = { id: string; email: string; companyId: string; companyName: string; role: string };

/** The error code next-auth hands to the sign-in form when attempts are refused. */
export const SIGN_IN_LOCKED = 'SignInLocked';

/** What a console session token carries beside next-auth's own claims. */
type SessionClaims = { sub?: string; companyId?: unknown; sv?: unknown };

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
        async authorize(credentials, req) {
          if (typeof credentials?.email !== 'string' || typeof credentials.password !== 'string' || !credentials.email || !credentials.password) return null;
          const result = await attemptSignIn({ db: await getDb(), email: credentials.email, password: credentials.password, address: clientAddress(req.headers ?? {}) });
          if (result.status === 'locked') throw new Error(SIGN_IN_LOCKED);
          if (result.status === 'failed') return null;
          const a = result.admin;
          return { id: a.id, email: a.email, name: a.companyName, companyId: a.companyId, role: a.role, sessionVersion: a.sessionVersion };
        },
      }),
    ],
    callbacks: {
      async jwt({ token, user }) {
        if (user) {
          const u = user as unknown as { companyId: string; role: string; name: string; sessionVersion: number };
          token.companyId = u.companyId;
          token.role = u.role;
          token.companyName = u.name;
          token.sv = u.sessionVersion;
        }
        return token;
      },
      async session({ session, token }) {
        const s = session as unknown as { user: ConsoleUser; claims: SessionClaims };
        s.user = {
          id: token.sub ?? '',
          email: token.email ?? '',
          companyId: String(token.companyId),
          companyName: String(token.companyName),
          role: String(token.role),
        };
        s.claims = { sub: token.sub, companyId: token.companyId, sv: token.sv };
        return session;
      },
    },
  };
  return options;
}

/**
 * The admin a session token still speaks for: the admin exists, in that company, and the
 * token's session version is the current one (a password change raises it; removal deletes
 * the admin). Role, email and company name come from the database, not the token.
 */
export async function findSessionUser(db: Db, claims: SessionClaims): Promise<ConsoleUser | null> {
  if (!claims.sub || typeof claims.companyId !== 'string' || typeof claims.sv !== 'number') return null;
  const [row] = await db
    .select({ admin: admins, companyName: companies.name })
    .from(admins)
    .innerJoin(companies, eq(companies.id, admins.companyId))
    .where(eq(admins.id, claims.sub));
  if (!row || row.admin.companyId !== claims.companyId || row.admin.sessionVersion !== claims.sv) return null;
  return { id: row.admin.id, email: row.admin.email, companyId: row.admin.companyId, companyName: row.companyName, role: row.admin.role };
}

/**
 * The signed-in console user, or a redirect to the sign-in page. Every console page and server
 * action starts here, so a revoked session stops working at its next request.
 */
export async function requireUser(): Promise<ConsoleUser> {
  const session = (await getServerSession(authOptions())) as { claims?: SessionClaims } | null;
  const user = session?.claims ? await findSessionUser(await getDb(), session.claims) : null;
  if (!user) redirect('/console/sign-in');
  return user;
}
