import { describe, expect, it } from 'vitest';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { RedactingSpanProcessor, redactTarget } from './tracing-redact';

const TOKEN = 'Zk3v9Qh2-secret_token_value_0123456789abcdefABC';

describe('span redaction', () => {
  it("replaces a hosted page's token, drops query values and URL credentials, keeps the rest", () => {
    expect(redactTarget(`/portal/${TOKEN}`)).toBe('/portal/[token]');
    expect(redactTarget(`/portal/${TOKEN}/card`)).toBe('/portal/[token]/card');
    expect(redactTarget(`/collect/${TOKEN}/submit?x=1`)).toBe('/collect/[token]/submit?x');
    expect(redactTarget(`/v1/collect/${TOKEN}`)).toBe('/v1/collect/[token]');
    expect(redactTarget('/console/accounts?q=ada%40example.com&page=2')).toBe('/console/accounts?q&page');
    expect(redactTarget('/v1/accounts/a_1/events')).toBe('/v1/accounts/a_1/events');
    expect(redactTarget('https://user:pa%40ss@hooks.example.com/in?sig=abc#frag')).toBe('https://hooks.example.com/in?sig');
    expect(redactTarget(`http://127.0.0.1:3000/portal/${TOKEN}`)).toBe('http://127.0.0.1:3000/portal/[token]');
    expect(redactTarget('/collector/x')).toBe('/collector/x');
  });

  it('cleans what spans carry before the exporter sees them, set at start or later', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new RedactingSpanProcessor(), new SimpleSpanProcessor({ exporter })] });
    const tracer = provider.getTracer('test');
    tracer.startSpan('GET', { attributes: { 'http.method': 'GET', 'http.target': `/portal/${TOKEN}?from=mail` } }).end();
    const fetchSpan = tracer.startSpan(`fetch POST https://u:p@hooks.example.com/x/${TOKEN}?k=v`, { attributes: { 'http.url': `https://u:p@hooks.example.com/x?k=${TOKEN}` } });
    fetchSpan.setAttribute('url.full', `https://hooks.example.com/portal/${TOKEN}`);
    fetchSpan.setAttribute('url.query', 'from=mail-secret&x=1');
    fetchSpan.setAttribute('next.span_name', `fetch POST https://u:p@hooks.example.com/x?k=v`);
    fetchSpan.end();
    await provider.forceFlush();
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => [s.name, s.attributes])).toEqual([
      ['GET', { 'http.method': 'GET', 'http.target': '/portal/[token]?from' }],
      [
        `fetch POST https://hooks.example.com/x/${TOKEN}?k`,
        { 'http.url': 'https://hooks.example.com/x?k', 'url.full': 'https://hooks.example.com/portal/[token]', 'url.query': 'from&x', 'next.span_name': 'fetch POST https://hooks.example.com/x?k' },
      ],
    ]);
    // Only a hosted page's path segment is a token; other paths are kept as they are.
    expect(JSON.stringify(spans.map((s) => [s.name, s.attributes]))).not.toMatch(/u:p@|mail-secret|k=/);
    await provider.shutdown();
  });
});
