/**
 * OpenTelemetry traces, only when OTEL_EXPORTER_OTLP_ENDPOINT is set: then instrumentation.ts
 * loads the SDK (lib/tracing-sdk.ts) before the server starts, and Next.js' own spans (one per
 * request, its route and render steps, its fetches) go to that OTLP/HTTP endpoint. Otherwise no
 * OpenTelemetry SDK module is loaded at all. This module imports none of it.
 */

/** OTEL_EXPORTER_OTLP_ENDPOINT, checked (an http or https URL), or null when tracing is off. */
export function tracingEndpoint(): string | null {
  const raw = process.env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!raw || process.env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`OTEL_EXPORTER_OTLP_ENDPOINT must be the http(s) URL of an OTLP/HTTP receiver (e.g. http://otel-collector:4318); got "${raw}".`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`OTEL_EXPORTER_OTLP_ENDPOINT must be an http or https URL (traces are sent as OTLP/HTTP); got "${raw}".`);
  }
  return raw;
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
