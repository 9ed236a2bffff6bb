import type { Topic } from '../billing/webhooks/topics';

/** What each webhook topic means, in the words an admin reads on the webhook page. */
export const TOPIC_HELP: Record<Topic, string> = {
  pause_balance: 'An account ran out: available went below zero, or a gated event was refused.',
  negative_balance: 'A balance went below zero.',
  balance_change: 'A balance changed (may be combined; always carries the balance at send time).',
  auto_refill: 'A refill or plan renewal added units.',
  threshold: 'Usage reached the plan’s alert percentage, or a balance fell below its refill threshold.',
  refill_failed: 'A refill’s card charge failed.',
  payment_failed: 'Any card charge failed.',
  card_changed: 'A customer saved a new card through the card collector or the customer portal.',
};
