/**
 * Monthly refills are due at 00:00 UTC on the refill day. Set on day 1–28: that day every
 * month. Set on the 29th–31st: the 1st of the second following month, then every 1st.
 */
export function computeRefillSchedule(setAt: Date): { refillOnDay: number; next: Date } {
  const y = setAt.getUTCFullYear();
  const m = setAt.getUTCMonth();
  const d = setAt.getUTCDate();
  if (d <= 28) return { refillOnDay: d, next: new Date(Date.UTC(y, m + 1, d)) };
  return { refillOnDay: 1, next: new Date(Date.UTC(y, m + 2, 1)) };
}

/** The refill after one due on `due` (the day is 1–28, so it exists in every month). */
export function computeFollowingRefill(due: Date, refillOnDay: number): Date {
  return new Date(Date.UTC(due.getUTCFullYear(), due.getUTCMonth() + 1, refillOnDay));
}
