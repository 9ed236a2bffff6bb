export * from './companies';
export * from './accounts';
export * from './ledger';
export * from './jobs';
export * from './webhooks';
export * from './totals';
export * from './enums';
export * from './limits';
