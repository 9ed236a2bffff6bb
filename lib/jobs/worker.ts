// Placeholder loop replaced by the job runner; kept minimal so boot has one entry point.
export function startWorker(): void {}
