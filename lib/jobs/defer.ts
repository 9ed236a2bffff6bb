/** Thrown by a job handler whose work cannot be done yet: the job runs again after `delayMs`, not counted as a failure. */
export class DeferJob extends Error {
  constructor(
    readonly delayMs: number,
    reason: string,
  ) {
    super(reason);
    this.name = 'DeferJob';
  }
}
