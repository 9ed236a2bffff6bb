// Every /v1 endpoint also answers without the prefix: one rewrite rule (each rule is tested on
// every request). Synonym paths (`autorefill`, `.../plan`) are route files of their own.

// No page may be framed (the console and the card form would be open to clickjacking) and no
// answer is content-sniffed. One rule for every path: API answers may carry them too, and a
// header rule costs the API far less than a proxy would. Strict-Transport-Security depends on
// PUBLIC_URL at run time, while these are fixed at build time: proxy.ts sets it.
const SECURITY_HEADERS = [
  { key: 'X-Frame-Options', value: 'DENY' },
  { key: 'Content-Security-Policy', value: "frame-ancestors 'none'" },
  { key: 'X-Content-Type-Options', value: 'nosniff' },
];

/** @type {import('next').NextConfig} */
const nextConfig = {
  // A self-contained server (.next/standalone) for the image: no node_modules install at deploy.
  output: 'standalone',
  // One module instance per process for what keeps process-wide state (the metrics registry, the
  // OpenTelemetry globals), loaded from node_modules; pino is external by Next.js' own default.
  serverExternalPackages: [
    '@electric-sql/pglite',
    'postgres',
    'prom-client',
    '@opentelemetry/api',
    '@opentelemetry/context-async-hooks',
    '@opentelemetry/core',
    '@opentelemetry/exporter-trace-otlp-http',
    '@opentelemetry/resources',
    '@opentelemetry/sdk-trace',
    // Reads its standard fonts' metrics from its own data/ folder at run time.
    'pdfkit',
  ],
  poweredByHeader: false,
  // `npm test` type-checks the whole project (its tests too) in a step of its own just before it
  // builds, and says so: the build does not check the same program a second time.
  typescript: { ignoreBuildErrors: process.env.BILLING_TYPES_CHECKED === '1' },
  experimental: {
    // Next.js copies the body of each request proxy.ts sees; pages take none worth more.
    proxyClientMaxBodySize: 64 * 1024,
    // Server actions are posted to any page, the hosted ones included, and Next.js reads the body
    // before the action can check its session: held to the 64 KiB of every unauthenticated route
    // (the console's forms send a few hundred bytes).
    serverActions: { bodySizeLimit: '64kb' },
    // Each route's and page's code is loaded when it is first asked for, not all at start: a
    // server that only answers the API never holds the console's pages (about 70-90 MB less at
    // the benchmark's peak, bench/README.md "What `npm start` keeps running"). The first request
    // to a route after a start waits for its code once.
    preloadEntriesOnStart: false,
  },
  async headers() {
    return [
      { source: '/:path*', headers: SECURITY_HEADERS },
      // A hosted page's token is in its path: no Referer may carry it to another site, whatever
      // the browser's default (the pages' own meta tag says the same).
      ...['/collect/:path*', '/portal/:path*'].map((source) => ({ source, headers: [{ key: 'Referrer-Policy', value: 'no-referrer' }] })),
    ];
  },
  async rewrites() {
    return {
      beforeFiles: [{ source: '/:path((?:accounts|events|grants|webhooks|companies|plans|portal_links|test_clock|openapi\\.json)(?:/.*)?)', destination: '/v1/:path' }],
    };
  },
};

export default nextConfig;
