/**
 * How long a customer portal link may work, in seconds: a day at most (and by default), long
 * enough to read and act on, short enough if it is forwarded; 5 minutes at least.
 */
export const PORTAL_LINK_TTL_S = { min: 300, max: 24 * 3600 } as const;
