export async function register() {
  if (process.env.NEXT_RUNTIME === 'nodejs') {
    const { boot } = await import('./lib/boot');
    try {
      await boot();
    } catch (err) {
      // Next.js would keep serving, every request a 500: a process that cannot start stops, so
      // the operator (or the orchestrator) sees why at once.
      console.error('Cannot start:', err instanceof Error ? err.message : err);
      process.exit(1);
    }
  }
}
