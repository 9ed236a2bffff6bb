process.env.BILLING_TEST_CLOCK = '1';

import { describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../testing/harness';
import { createAccount, spend } from '../testing/scenario';
import { now } from '../clock';
import { accountUsageByDay, usageCsv, USAGE_CHART_DAYS } from './usage';

const t = useTestDatabase();

describe("the console's and the portal's usage chart and its CSV", () => {
  it('gives 30 UTC days ending today, events per type for the bars, exact figures for the table and the CSV', async () => {
    const co = await newCompany(t);
    const ada = await createAccount(co);
    for (const [type, cost] of [['chat', '0.1'], ['chat', '0.2'], ['=cmd', '3']] as const) await spend(co, ada, cost, { type });
    const at = now();
    const { days, types, rows } = await accountUsageByDay({ db: t.database.db, companyId: co.company.id, accountId: ada, now: at });
    expect(days).toHaveLength(USAGE_CHART_DAYS);
    const today = at.toISOString().slice(0, 10);
    expect(days[days.length - 1]).toEqual({ day: today, counts: { '=cmd': 1, chat: 2 }, rows: [{ type: '=cmd', events: '1', cost: '3 credits' }, { type: 'chat', events: '2', cost: '0.3 credits' }] });
    expect(days.slice(0, -1).every((d) => d.rows.length === 0)).toBe(true);
    expect(types).toEqual(['=cmd', 'chat']);
    // A type that would run as a spreadsheet formula is written so it is shown, never run.
    expect(usageCsv(rows)).toBe(`day,type,denomination,events,cost,quantities\r\n${today},'=cmd,credits,1,3,\r\n${today},chat,credits,2,0.3,\r\n`);
    // Another company's account: not found, nothing read.
    const other = await newCompany(t);
    await expect(accountUsageByDay({ db: t.database.db, companyId: other.company.id, accountId: ada, now: at })).rejects.toMatchObject({ type: 'not_found' });
  });
});
