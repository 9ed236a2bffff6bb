import { NextResponse, type NextRequest } from 'next/server';
import { setting } from './lib/env';
import { consoleAddressProblem } from './lib/console/address';

/**
 * Strict-Transport-Security once the service is served over HTTPS (PUBLIC_URL), decided at run
 * time: next.config's headers are fixed when the application is built. Only the HTML pages pass
 * through here (a browser that saw one keeps to HTTPS for the whole host): never the API, whose
 * throughput a proxy would cost, nor calls with bodies (sign-in, the collector's and the portal's submits, server
 * actions), whose bodies Next.js would copy before the route could bound them.
 */
export function proxy(request: NextRequest) {
  // A console address its pages could not read (lib/console/address.ts).
  const problem = request.nextUrl.pathname.startsWith('/console') ? consoleAddressProblem(request.nextUrl) : null;
  const response = problem ? new NextResponse(problem, { status: 400, headers: { 'content-type': 'text/plain; charset=utf-8' } }) : NextResponse.next();
  if (/^https:\/\//i.test(setting('PUBLIC_URL') ?? '')) response.headers.set('Strict-Transport-Security', 'max-age=31536000');
  return response;
}

export const config = {
  matcher: [
    { source: '/', missing: [{ type: 'header', key: 'next-action' }] },
    { source: '/console/:path*', missing: [{ type: 'header', key: 'next-action' }] },
    { source: '/collect/:token', missing: [{ type: 'header', key: 'next-action' }] },
    { source: '/portal/:token', missing: [{ type: 'header', key: 'next-action' }] },
    { source: '/portal/:token/receipts/:charge', missing: [{ type: 'header', key: 'next-action' }] },
    { source: '/docs/:path*', missing: [{ type: 'header', key: 'next-action' }] },
  ],
};
