import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DrizzleQueryError } from 'drizzle-orm';
import { censorLine, log, logLevel, SECRET_FIELDS, SECRET_HEADERS, serializeError } from './log';
import { captureLogs } from './testing/log-capture';
import { withSettings } from './env';

const root = path.resolve(__dirname, '..');

describe('the logger', () => {
  it('reads LOG_LEVEL, info by default, and refuses a level it does not know, naming the variable', () => {
    const level = (value: string | undefined) => withSettings({ LOG_LEVEL: value }, logLevel);
    expect(level(undefined)).toBe('info');
    expect(level(' DEBUG ')).toBe('debug');
    expect(level('silent')).toBe('silent');
    expect(() => level('verbose')).toThrow('LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent; got "verbose".');
  });

  it('writes one JSON object per line with level, time and msg, and censors secret fields wherever they are put', () => {
    const cap = captureLogs();
    try {
      log.info(
        { request_id: 'req_1', password: 'hunter2-hunter2', headers: { authorization: 'Basic Zm9vOmJhcg==' }, company: { api_key: 'sk_leak', processor_key: 'sk_test_leak' }, token: 'cl_tok' },
        'hello',
      );
    } finally {
      cap.stop();
    }
    expect(cap.text().split('\n').filter(Boolean)).toHaveLength(1);
    const [line] = cap.lines;
    expect(line).toMatchObject({ level: 'info', msg: 'hello', request_id: 'req_1', password: '[redacted]', headers: { authorization: '[redacted]' }, company: { api_key: '[redacted]', processor_key: '[redacted]' }, token: '[redacted]' });
    expect(new Date(line.time as string).toISOString()).toBe(line.time);
    expect(cap.text()).not.toMatch(/hunter2|Zm9v|sk_leak|sk_test_leak|cl_tok/);
  });

  it('censors each secret field on the line and one level down, secret headers two levels down, and leaves the rest and the caller\'s object alone', () => {
    const line = {
      request_id: 'req_1',
      status: 200,
      password: 'p0',
      nothing: undefined,
      company: { id: 'co_1', api_key: 'p1', nested: { token: 'kept-two-levels-down' } },
      headers: { authorization: 'p2', 'x-api-key': 'p3', cookie: 'p4', accept: 'json', secret: 'p5' },
      upstream: { headers: { 'x-api-key': 'p6', authorization: 'p7', host: 'h' }, card_token: 'p8' },
      list: [{ token: 'kept-in-array-element' }],
      err: Object.assign(new Error('boom'), { token: 'on-the-error' }),
    };
    const before = structuredClone({ ...line, err: undefined });
    const out = censorLine(line);
    expect(out).toMatchObject({
      request_id: 'req_1',
      status: 200,
      password: '[redacted]',
      company: { id: 'co_1', api_key: '[redacted]', nested: { token: 'kept-two-levels-down' } },
      headers: { authorization: '[redacted]', 'x-api-key': '[redacted]', cookie: '[redacted]', accept: 'json', secret: '[redacted]' },
      upstream: { headers: { 'x-api-key': '[redacted]', authorization: '[redacted]', host: 'h' }, card_token: '[redacted]' },
    });
    expect(out.nothing).toBeUndefined();
    // An error is left to serializeError, which keeps none of its own properties.
    expect(out.err).toBe(line.err);
    expect(structuredClone({ ...line, err: undefined })).toEqual(before);
    // A line with nothing to censor is passed through as it is: no copy per request.
    const clean = { request_id: 'req_2', method: 'POST', route: '/v1/accounts/{account_id}/events', status: 200, duration_ms: 2.1 };
    expect(censorLine(clean)).toBe(clean);
    // Every field and header name is censored, top level and one down.
    for (const name of SECRET_FIELDS) {
      expect(censorLine({ [name]: 'x', wrap: { [name]: 'y' } })).toEqual({ [name]: '[redacted]', wrap: { [name]: '[redacted]' } });
    }
    for (const name of SECRET_HEADERS) {
      expect(censorLine({ wrap: { headers: { [name]: 'y' } } })).toEqual({ wrap: { headers: { [name]: '[redacted]' } } });
    }
  });

  it("shows an error's kind, message, code and stack, never the properties drivers hang on it", () => {
    const err = Object.assign(new Error('duplicate key'), { code: '23505', parameters: ['sk_secretvalue'], query: 'insert into api_keys', raw: { headers: { authorization: 'Bearer x' } } });
    expect(Object.keys(serializeError(err)).sort()).toEqual(['code', 'message', 'stack', 'type']);
    const cap = captureLogs();
    try {
      log.error({ err }, 'failed');
    } finally {
      cap.stop();
    }
    expect(cap.lines[0]).toMatchObject({ level: 'error', msg: 'failed', err: { type: 'Error', message: 'duplicate key', code: '23505' } });
    expect(cap.text()).not.toMatch(/sk_secretvalue|insert into|Bearer/);
  });

  it("shows a failed query's statement and reason, never its parameters", () => {
    const cause = Object.assign(new Error('value too long for type character varying(255)'), { code: '22001' });
    const err = new DrizzleQueryError('update webhooks set url = $1 where id = $2', ['https://hooks.example.com/t/secret-path-token', 'w_1'], cause);
    const shown = serializeError(err);
    expect(shown).toMatchObject({ code: '22001', message: 'Failed query: update webhooks set url = $1 where id = $2 (value too long for type character varying(255))' });
    expect(JSON.stringify(shown)).not.toContain('secret-path-token');
  });

  it('prints plain text on stderr for commands a person runs, and JSON lines on stdout in servers', () => {
    const script = (setup: string) =>
      spawnSync(process.execPath, ['--import', 'tsx', '-e', `import('./lib/log.ts').then((m) => { ${setup} m.log.info('just so'); m.log.warn({ err: new Error('why') }, 'something is off'); })`], {
        cwd: root,
        encoding: 'utf8',
        env: { ...process.env, LOG_LEVEL: 'info' },
      });
    const cli = script('m.logForCommandLine();');
    expect(cli.stdout).toBe('');
    expect(cli.stderr).toBe('something is off: why\n');
    const server = script('');
    expect(server.stderr).toBe('');
    const lines = server.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['info', 'just so'],
      ['warn', 'something is off'],
    ]);
    expect(lines[1].err.message).toBe('why');
  });
});
