// Every /v1 endpoint also answers without the prefix: one rewrite rule (each rule is tested on
// every request). Synonym paths (`autorefill`, `.../plan`) are route files of their own.
/** @type {import('next').NextConfig} */
const nextConfig = {
  // A self-contained server (.next/standalone) for the image: no node_modules install at deploy.
  output: 'standalone',
  serverExternalPackages: ['@electric-sql/pglite', 'postgres'],
  poweredByHeader: false,
  typescript: { ignoreBuildErrors: false },
  async rewrites() {
    return {
      beforeFiles: [{ source: '/:path((?:accounts|events|webhooks|companies|plans|test_clock|openapi\\.json)(?:/.*)?)', destination: '/v1/:path' }],
    };
  },
};

export default nextConfig;
