// Every /v1 endpoint also answers without the prefix, and `autorefill` is a synonym of `auto_refill`.
const unprefixed = ['accounts', 'events', 'webhooks', 'companies', 'plans', 'test_clock', 'openapi.json'];

/** @type {import('next').NextConfig} */
const nextConfig = {
  serverExternalPackages: ['@electric-sql/pglite', 'postgres'],
  poweredByHeader: false,
  typescript: { ignoreBuildErrors: false },
  async rewrites() {
    return {
      beforeFiles: [
        { source: '/v1/accounts/:account_id/balance/:denomination/autorefill', destination: '/v1/accounts/:account_id/balance/:denomination/auto_refill' },
        { source: '/v1/accounts/:account_id/autorefill', destination: '/v1/accounts/:account_id/auto_refill' },
        { source: '/v1/companies/:company_id/plan', destination: '/v1/companies/:company_id/plans' },
        { source: '/accounts/:account_id/balance/:denomination/autorefill', destination: '/v1/accounts/:account_id/balance/:denomination/auto_refill' },
        { source: '/accounts/:account_id/autorefill', destination: '/v1/accounts/:account_id/auto_refill' },
        { source: '/companies/:company_id/plan', destination: '/v1/companies/:company_id/plans' },
        ...unprefixed.flatMap((p) => [
          { source: `/${p}`, destination: `/v1/${p}` },
          { source: `/${p}/:path*`, destination: `/v1/${p}/:path*` },
        ]),
      ],
    };
  },
};

export default nextConfig;
