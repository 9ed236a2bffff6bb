import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { onTracingStarted } from './tracing';
import { RedactingSpanProcessor } from './tracing-redact';

/**
 * The OpenTelemetry SDK as Next.js' guide sets it up by hand, with only what traces need: spans
 * batched to OTLP/HTTP, the W3C trace context taken from and passed on in headers, and the
 * active span carried across async calls; every span's URLs are cleaned first (lib/tracing-redact.ts). The exporter reads the standard OTEL_EXPORTER_OTLP_*
 * variables (endpoint, headers, timeout); OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the
 * service (`billing` by default).
 */
export function startTracing(): void {
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'billing' }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({ resource, spanProcessors: [new RedactingSpanProcessor(), new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }));
  trace.setGlobalTracerProvider(provider);
  onTracingStarted(() => provider.forceFlush());
}
