import type { CardSummary, PaymentLook, PaymentOutcome, PaymentRequest, Processor } from '../processor/port';

/**
 * A payment processor in memory that implements the port as Stripe behaves, with every fault the
 * charge simulation plays: requests held and carried out late (the key in flight meanwhile: 409),
 * answers lost after the payment was made, the company's key refused (401/403, checked before the
 * idempotency cache), 5xx before or after the work, payments that settle late (`processing`),
 * idempotency keys that expire 24 hours after their first use on the processor's own clock, and
 * a process that dies right before or after a call. Each call waits at a gate the simulation
 * opens, with the fault it chooses, so the interleaving of the service's workers is the
 * simulation's, call by call.
 */

/** What the processor does with one call. */
export type Fault =
  | 'ok'
  /** Carried out later, when the simulation says; the caller hears nothing (a timeout). */
  | 'hold'
  /** Carried out, the answer lost. */
  | 'lose'
  /** A 5xx before anything is done. */
  | 'error_before'
  /** A 5xx after the work was done. */
  | 'error_after'
  /** The payment is made and stays `processing` until the simulation settles it. */
  | 'processing'
  /** The calling process dies before the call leaves it. */
  | 'crash_before'
  /** The call is carried out and the calling process dies before it reads the answer. */
  | 'crash_after';

export class SimulatedCrash extends Error {
  constructor(where: string) {
    super(`the process died ${where}`);
  }
}

type Intent = { id: string; chargeId: string; customer: string; amount: number; created: number; status: 'succeeded' | 'declined' | 'processing'; settlesTo: 'succeeded' | 'declined' };
type KeyRecord = { firstUse: number; inFlight: boolean; intentId: string | null };
type Held = { req: PaymentRequest; fault: 'ok' | 'processing' };

export type Call = { kind: 'create' | 'retrieve' | 'find'; release: (fault: Fault) => void };

const KEY_LIFE_MS = 24 * 3600_000;

export class ScriptedProcessor implements Processor {
  readonly intents = new Map<string, Intent>();
  private readonly keys = new Map<string, KeyRecord>();
  readonly held: Held[] = [];
  /** Calls waiting at their gate, oldest first. */
  readonly waiting: Call[] = [];
  /** The company's API key is refused (401/403) until this processor time. */
  keyRefusedUntil = -Infinity;
  private seq = 0;

  /**
   * @param now the processor's clock (real time)
   * @param declines whether the customer's card is declined
   * @param blocked called when a call starts waiting at its gate, and when it is let through
   */
  constructor(
    private readonly now: () => number,
    private readonly declines: (customer: string) => boolean,
    private readonly blocked: (delta: 1 | -1) => void,
  ) {}

  private gate(kind: Call['kind']): Promise<Fault> {
    return new Promise((resolve) => {
      this.blocked(1);
      this.waiting.push({
        kind,
        release: (fault) => {
          this.blocked(-1);
          resolve(fault);
        },
      });
    });
  }

  private keyRefused(): boolean {
    return this.now() < this.keyRefusedUntil;
  }

  private record(key: string): KeyRecord | undefined {
    const rec = this.keys.get(key);
    if (rec && !rec.inFlight && this.now() - rec.firstUse >= KEY_LIFE_MS) {
      this.keys.delete(key);
      return undefined;
    }
    return rec;
  }

  private answerOf(intent: Intent): PaymentOutcome {
    if (intent.status === 'succeeded') return { kind: 'paid', intentId: intent.id };
    if (intent.status === 'declined') return { kind: 'declined', code: 'card_declined', message: 'The card was declined.', intentId: intent.id };
    return { kind: 'unknown', intentId: intent.id, why: 'processing' };
  }

  /** Carries a payment out under its key: the key then answers with it for 24 hours. */
  private execute(req: PaymentRequest, fault: 'ok' | 'processing'): Intent {
    const settlesTo = this.declines(req.customer) ? 'declined' : 'succeeded';
    const intent: Intent = {
      id: `pi_sim_${++this.seq}`,
      chargeId: req.metadata.charge_id,
      customer: req.customer,
      amount: req.amount,
      created: this.now(),
      status: fault === 'processing' ? 'processing' : settlesTo,
      settlesTo,
    };
    this.intents.set(intent.id, intent);
    const rec = this.keys.get(req.idempotencyKey);
    this.keys.set(req.idempotencyKey, { firstUse: rec?.firstUse ?? this.now(), inFlight: false, intentId: intent.id });
    return intent;
  }

  /** The simulation carries out the oldest held request (it reaches the processor late). */
  runHeld(): boolean {
    const h = this.held.shift();
    if (!h) return false;
    this.execute(h.req, h.fault);
    return true;
  }

  /** The simulation lets one payment still processing settle. */
  settleOne(): boolean {
    const intent = [...this.intents.values()].find((i) => i.status === 'processing');
    if (!intent) return false;
    intent.status = intent.settlesTo;
    return true;
  }

  async createPayment(req: PaymentRequest): Promise<PaymentOutcome> {
    const fault = await this.gate('create');
    if (fault === 'crash_before') throw new SimulatedCrash('before its payment request left');
    // The key is checked before the idempotency cache: nothing is learnt, nothing is done.
    if (this.keyRefused()) return req.firstSend ? { kind: 'refused', message: 'invalid API key' } : { kind: 'unknown', intentId: null, why: 'key_refused' };
    if (fault === 'error_before') return { kind: 'unknown', intentId: null, why: 'server_error' };
    const rec = this.record(req.idempotencyKey);
    if (rec?.inFlight) return { kind: 'unknown', intentId: null, why: 'in_use' };
    let answer: PaymentOutcome;
    if (rec?.intentId) {
      answer = this.answerOf(this.intents.get(rec.intentId)!);
    } else if (fault === 'hold') {
      this.keys.set(req.idempotencyKey, { firstUse: this.now(), inFlight: true, intentId: null });
      this.held.push({ req, fault: 'ok' });
      return { kind: 'unknown', intentId: null, why: 'no_answer' };
    } else {
      answer = this.answerOf(this.execute(req, fault === 'processing' ? 'processing' : 'ok'));
    }
    if (fault === 'crash_after') throw new SimulatedCrash('after its payment was made, before the answer was read');
    if (fault === 'lose') return { kind: 'unknown', intentId: null, why: 'no_answer' };
    if (fault === 'error_after') return { kind: 'unknown', intentId: null, why: 'server_error' };
    return answer;
  }

  async retrievePayment(intentId: string): Promise<PaymentLook> {
    const fault = await this.gate('retrieve');
    if (fault === 'crash_before' || fault === 'crash_after') throw new SimulatedCrash('while reading a payment');
    if (this.keyRefused() || fault === 'error_before' || fault === 'error_after' || fault === 'lose' || fault === 'hold') return { kind: 'unanswered' };
    const intent = this.intents.get(intentId);
    return intent ? this.answerOf(intent) : { kind: 'not_found' };
  }

  async findPayment({ customer, chargeId, since }: { customer: string; chargeId: string; since: Date }): Promise<PaymentLook> {
    const fault = await this.gate('find');
    if (fault === 'crash_before' || fault === 'crash_after') throw new SimulatedCrash('while looking for a payment');
    if (this.keyRefused() || fault === 'error_before' || fault === 'error_after' || fault === 'lose' || fault === 'hold') return { kind: 'unanswered' };
    const found = [...this.intents.values()].find((i) => i.customer === customer && i.chargeId === chargeId && i.created >= since.getTime());
    return found ? this.answerOf(found) : { kind: 'not_found' };
  }

  async createCustomer({ accountId }: { accountId: string }): Promise<string> {
    return `cus_sim_${accountId}`;
  }

  async defaultCard(): Promise<CardSummary | null> {
    return null;
  }

  async attachCard({ token }: { token: string }): Promise<CardSummary> {
    return { id: `pm_sim_${token}`, brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2040 };
  }
}
