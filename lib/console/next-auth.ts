import type { NextAuthOptions } from 'next-auth';
import { getServerSession } from 'next-auth';
import CredentialsProvider from 'next-auth/providers/credentials';
import { redirect } from 'next/navigation';
import { and, eq } from 'drizzle-orm';
import { getDb, type Db } from '../db/client';
import { admins, companies, consoleSessions } from '../db/schema';
import { consoleSessionSecret } from '../secrets';
import { attemptSignIn } from './sign-in';
import { endConsoleSession, openConsoleSession, openSession, SESSION_MAX_AGE_S } from './sessions';
import { clientAddress } from '../net/client-address';
import { testRunnerOnly } from '../env';

export type ConsoleUser = { id: string; email: string; companyId: string; companyName: string; role: string };

/** The error code next-auth hands to the sign-in form when attempts are refused. */
export const SIGN_IN_LOCKED = 'SignInLocked';
/**
 * The error code when sign-in is too busy to check a password now, with the seconds to wait
 * (`SignInBusy:5`): the sign-in route answers it 503 with Retry-After.
 */
export const SIGN_IN_BUSY = 'SignInBusy';

/** What a console session token carries beside next-auth's own claims. */
type SessionClaims = { sub?: string; companyId?: unknown; sv?: unknown; sid?: unknown };

let options: NextAuthOptions | undefined;

/** Tests only: the options made again on next use (they hold the session secret of the settings then). */
export function forgetAuthOptionsForTests(): void {
  testRunnerOnly('forgetAuthOptionsForTests');
  options = undefined;
}

export function authOptions(): NextAuthOptions {
  if (options) return options;
  options = {
    secret: consoleSessionSecret(),
    session: { strategy: 'jwt', maxAge: SESSION_MAX_AGE_S },
    pages: { signIn: '/console/sign-in' },
    providers: [
      CredentialsProvider({
        name: 'Email and password',
        credentials: { email: { label: 'Email', type: 'email' }, password: { label: 'Password', type: 'password' } },
        async authorize(credentials, req) {
          if (typeof credentials?.email !== 'string' || typeof credentials.password !== 'string' || !credentials.email || !credentials.password) return null;
          const result = await attemptSignIn({ db: await getDb(), email: credentials.email, password: credentials.password, address: clientAddress(req.headers ?? {}) });
          if (result.status === 'locked') throw new Error(SIGN_IN_LOCKED);
          if (result.status === 'busy') throw new Error(`${SIGN_IN_BUSY}:${result.retryAfterS}`);
          if (result.status === 'failed') return null;
          const a = result.admin;
          const sid = await openConsoleSession(await getDb(), a.id);
          return { id: a.id, email: a.email, name: a.companyName, companyId: a.companyId, role: a.role, sessionVersion: a.sessionVersion, sid };
        },
      }),
    ],
    callbacks: {
      async jwt({ token, user }) {
        if (user) {
          const u = user as unknown as { companyId: string; role: string; name: string; sessionVersion: number; sid: string };
          token.companyId = u.companyId;
          token.role = u.role;
          token.companyName = u.name;
          token.sv = u.sessionVersion;
          token.sid = u.sid;
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
        s.claims = { sub: token.sub, companyId: token.companyId, sv: token.sv, sid: token.sid };
        return session;
      },
    },
    events: {
      // The cookie is deleted by next-auth; the session ends here, so a copy of it stops working too.
      async signOut({ token }) {
        if (typeof token?.sid === 'string') await endConsoleSession(await getDb(), token.sid);
      },
    },
  };
  return options;
}

/**
 * The admin a session token still speaks for: its session is open (not signed out of, within
 * 12 hours of its sign-in), the admin exists, in that company, and the token's session version
 * is the current one (a password change raises it; removal deletes the admin). Role, email and
 * company name come from the database, not the token.
 */
export async function findSessionUser(db: Db, claims: SessionClaims): Promise<ConsoleUser | null> {
  if (!claims.sub || typeof claims.companyId !== 'string' || typeof claims.sv !== 'number' || typeof claims.sid !== 'string') return null;
  const [row] = await db
    .select({ admin: admins, companyName: companies.name })
    .from(admins)
    .innerJoin(companies, eq(companies.id, admins.companyId))
    .innerJoin(consoleSessions, and(eq(consoleSessions.adminId, admins.id), openSession(claims.sid)))
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
