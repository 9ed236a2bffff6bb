export async function register() {
  if (process.env.NEXT_RUNTIME === 'nodejs') {
    try {
      // The whole configuration first: a wrong value stops the start before anything uses it.
      const { loadEnv } = await import('./lib/env');
      loadEnv();
      // Before anything serves, so the first request is traced too; the SDK is loaded only then.
      const { tracingEndpoint } = await import('./lib/tracing');
      if (tracingEndpoint()) (await import('./lib/tracing-sdk')).startTracing();
      const { boot } = await import('./lib/boot');
      await boot();
    } catch (err) {
      // Next.js would keep serving, every request a 500: a process that cannot start stops, so
      // the operator (or the orchestrator) sees why at once.
      const { log } = await import('./lib/log');
      const { ConfigError } = await import('./lib/env');
      if (err instanceof ConfigError) {
        log.fatal(`Cannot start: ${err.message}`);
        process.exit(2);
      }
      log.fatal({ err }, `Cannot start: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    }
  }
}
