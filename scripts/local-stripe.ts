/**
 * Runs the local Stripe-compatible server (local-stripe/) until
 * SIGINT/SIGTERM. Port: $PORT or 12111. Point the app at it with
 * STRIPE_API_URL=http://127.0.0.1:12111 and any sk_test_… key.
 */
import { startLocalStripe } from '../local-stripe/server';

async function main(): Promise<void> {
  const port = process.env.PORT ? Number(process.env.PORT) : 12111;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid PORT: ${process.env.PORT}`);
  const server = await startLocalStripe({ port, host: '127.0.0.1' });
  console.log(`local stripe listening on ${server.url}`);

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    console.log(`local stripe stopping (${signal})`);
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
