import NextAuth from 'next-auth';
import { NextRequest } from 'next/server';
import { authOptions, SIGN_IN_BUSY } from '@/lib/auth';
import { PUBLIC_MAX_BODY, readBoundedBody } from '@/lib/api/body';
import { errorResponse, newRequestId } from '@/lib/api/route';
import { ApiError } from '@/lib/errors';

type Ctx = { params: Promise<{ nextauth: string[] }> };

// next-auth reads the whole body itself, however large: it gets a copy of at most 64 KiB instead.
async function handler(req: NextRequest, ctx: Ctx) {
  let bounded = req;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    try {
      const body = await readBoundedBody(req, PUBLIC_MAX_BODY);
      bounded = new NextRequest(req.url, { method: req.method, headers: req.headers, body: new Uint8Array(body) });
    } catch (err) {
      if (err instanceof ApiError) return errorResponse(err, newRequestId());
      throw err;
    }
  }
  return busyAsUnavailable(await NextAuth(bounded as never, { params: await ctx.params } as never, authOptions()));
}

/**
 * A sign-in refused because passwords cannot be checked now (the hashing queue is full, or the
 * service's failed sign-ins are at their budget) is answered 503 with Retry-After, the body as
 * next-auth made it (its client reads the error from it).
 */
async function busyAsUnavailable(res: Response): Promise<Response> {
  const location = res.headers.get('location') ?? '';
  const json = res.headers.get('content-type')?.includes('application/json') ? await res.clone().text() : '';
  const m = new RegExp(`[?&]error=${SIGN_IN_BUSY}(?:%3A|:)(\\d+)`).exec(`${location} ${json}`);
  if (!m) return res;
  const headers = new Headers(res.headers);
  headers.delete('location');
  headers.set('retry-after', m[1]);
  headers.set('cache-control', 'no-store');
  return new Response(json || null, { status: 503, headers });
}
export { handler as GET, handler as POST };
