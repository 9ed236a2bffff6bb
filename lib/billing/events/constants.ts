export const HOLD_MS = 60 * 60 * 1000;
