export const TOPICS = ['pause_balance', 'negative_balance', 'balance_change', 'auto_refill', 'threshold', 'refill_failed', 'payment_failed'] as const;
export type Topic = (typeof TOPICS)[number];
