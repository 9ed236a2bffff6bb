import { decrypt } from '../crypto';
import { testRunnerOnly } from '../env';
import type { Processor } from './port';
import { stripeProcessor } from './stripe';

/** Makes the processor client for a company's secret key. */
export type ProcessorFactory = (secretKey: string) => Processor;

type Registry = { make: ProcessorFactory | null };
const registry: Registry = ((globalThis as { __billingProcessors?: Registry }).__billingProcessors ??= { make: null });

/**
 * Puts another implementation in place of the Stripe adapter (tests, the charge simulation);
 * returns what puts the adapter back. Production never calls it.
 */
export function replaceProcessors(make: ProcessorFactory): () => void {
  const before = registry.make;
  registry.make = make;
  return () => {
    registry.make = before;
  };
}

/** Tests only: the Stripe adapter again, whatever a test file put in its place and did not put back. */
export function resetProcessorsForTests(): void {
  testRunnerOnly('resetProcessorsForTests');
  registry.make = null;
}

export type ProcessorCompany = { processorKeyEnc: string | null };

/** The processor of a company (the Stripe adapter for its key); null when it has no processor key. */
export function processorFor(company: ProcessorCompany): Processor | null {
  if (!company.processorKeyEnc) return null;
  return (registry.make ?? stripeProcessor)(decrypt(company.processorKeyEnc));
}
