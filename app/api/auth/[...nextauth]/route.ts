import NextAuth from 'next-auth';
import { NextRequest } from 'next/server';
import { authOptions } from '@/lib/auth';
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
  return NextAuth(bounded as never, { params: await ctx.params } as never, authOptions());
}
export { handler as GET, handler as POST };
