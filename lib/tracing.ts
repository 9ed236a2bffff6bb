import { setting } from './env';

/**
 * OpenTelemetry traces, only when OTEL_EXPORTER_OTLP_ENDPOINT is set: then instrumentation.ts
 * loads the SDK (lib/tracing-sdk.ts) before the server starts, and Next.js' own spans (one per
 * request, its route and render steps, its fetches) go to that OTLP/HTTP endpoint. Otherwise no
 * OpenTelemetry SDK module is loaded at all. This module imports none of it.
 */

/** OTEL_EXPORTER_OTLP_ENDPOINT, checked (an http or https URL), or null when tracing is off. */
export function tracingEndpoint(): string | null {
  const endpoint = setting('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (!endpoint || setting('OTEL_SDK_DISABLED')) return null;
  return endpoint;
}

type Tracing = { flush?: () => Promise<void> };
const state: Tracing = ((globalThis as { __billingTracing?: Tracing }).__billingTracing ??= {});

/** Called by the SDK module once it has started, so a stop can send what is still buffered. */
export function onTracingStarted(flush: () => Promise<void>): void {
  state.flush = flush;
}

/** Sends the spans still buffered (on SIGTERM); nothing when tracing is off. */
export async function flushTracing(): Promise<void> {
  await state.flush?.();
}
