/**
 * Retry schedule after a failed attempt (non-2xx, redirect, network error, refused destination
 * or no answer within the timeout): 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h, 8 h. Ten
 * attempts over about 23.7 hours, then the delivery is `failed` (it can still be re-sent by API).
 */
export const RETRY_DELAYS_S = [30, 120, 600, 1800, 3600, 7200, 14400, 28800, 28800] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_S.length + 1;
/**
 * The most attempts one delivery gets, automatic and re-sent by API together: a re-send past it is
 * 409. Ten are the schedule's; the rest leave room for re-sends after a receiver is fixed, while
 * a script re-sending in a loop cannot grow one delivery's log (or its receiver's load) forever.
 */
export const MAX_DELIVERY_ATTEMPTS = 20;
