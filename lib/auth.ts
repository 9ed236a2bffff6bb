import type { NextAuthOptions } from 'next-auth';
import { getServerSession } from 'next-auth';
import CredentialsProvider from 'next-auth/providers/credentials';
import { redirect } from 'next/navigation';
import { getDb } from './db/client';
import { consoleSessionSecret } from './config';
import { attemptSignIn, clientAddress } from './console/sign-in';

export type ConsoleUser = { id: string; email: string; companyId: string; companyName: string; role: string };

/** The error code next-auth hands to the sign-in form when attempts are refused. */
export const SIGN_IN_LOCKED = 'SignInLocked';

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
          return { id: a.id, email: a.email, name: a.companyName, companyId: a.companyId, role: a.role };
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
