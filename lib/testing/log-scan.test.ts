import { describe, expect, it } from 'vitest';
import { findSecrets, logLines } from './log-scan';

const clean = [
  '{"level":"info","time":"2026-01-01T00:00:00.000Z","pid":1,"request_id":"req_abc","company_id":"c_01j","method":"POST","route":"/v1/accounts/{account_id}/events","status":200,"duration_ms":3.2,"msg":"POST /v1/accounts/{account_id}/events 200"}',
  '{"level":"info","time":"2026-01-01T00:00:00.000Z","pid":1,"charge_id":"ch_01j","account_id":"a_01j","amount":1500,"outcome":"declined","failure_code":"card_declined","msg":"charge attempt"}',
  '{"level":"info","time":"2026-01-01T00:00:00.000Z","pid":1,"password":"[redacted]","msg":"sk_ and tok_ and whsec_ named but not given"}',
].join('\n');

describe('the log scanner', () => {
  it('finds nothing in clean lines', () => {
    expect(findSecrets(clean, { password: 'correct horse battery', app_secret: 'test-secret-of-at-least-32-bytes-0123456789' })).toEqual([]);
  });

  it('catches each kind of secret planted in a line', () => {
    const planted: [string, string, Record<string, string>?][] = [
      ['api key', 'sk_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6'],
      ['processor key', 'sk_test_51Hxyz'],
      ['processor key', 'rk_live_abc123'],
      ['processor key', 'pk_test_demo'],
      ['card token', 'tok_visa'],
      ['webhook secret', 'whsec_' + Buffer.alloc(32, 7).toString('base64')],
      ['basic credentials', 'Basic ' + Buffer.from('c_01j:sk_whatever').toString('base64')],
      ['bearer token', 'Bearer admin-token-0123'],
      ['password', 'correct horse battery', { password: 'correct horse battery' }],
      ['password', encodeURIComponent('p@ss w0rd&more'), { password: 'p@ss w0rd&more' }],
      ['app secret', Buffer.from('test-secret-of-at-least-32-bytes-0123456789').toString('base64'), { 'app secret': 'test-secret-of-at-least-32-bytes-0123456789' }],
    ];
    for (const [kind, secret, known] of planted) {
      const leaked = clean + '\n' + JSON.stringify({ level: 'error', msg: 'request failed', err: { message: `bad input: ${secret}` } });
      const found = findSecrets(leaked, known);
      expect(found.map((l) => l.kind), secret).toContain(kind);
      expect(found.every((l) => l.line === 4), secret).toBe(true);
    }
  });

  it('refuses known values too short to mean anything', () => {
    expect(() => findSecrets('', { password: 'abc' })).toThrow(/3 characters/);
  });

  it('keeps the JSON log lines of mixed output', () => {
    expect(logLines(`banner: sk_shown_once\n${clean}\nnot json {`).split('\n')).toHaveLength(3);
  });
});
