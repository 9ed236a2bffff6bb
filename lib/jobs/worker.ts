import { query, sql, getDatabase, pendingMigrations, type Db } from '../db/client';
import { isTestClock, now as clockNow, setTestTime } from '../clock';
import { claimJobs, deferJob, failJob, finishJob, holdJob, nextQueuedJob, releaseJobs, type Job } from '../db/sql/jobs';
import { DeferJob } from './defer';
import { log } from '../log';
import { observeTask } from '../metrics/tasks';
import { setting, testRunnerOnly } from '../env';

/**
 * Work that runs when due. Each returns how many items it handled (0 means nothing was due).
 * `background` is set by the worker loop: a task may then leave work running after it returns
 * (webhook sends), and `stop` ends that. `stopping` turns true when the process shuts down: a
 * task that claimed several items finishes the one under way and gives the rest back. `nextDue`
 * answers the earliest time strictly after `after` at which the task has work.
 */
export type RunOptions = { background?: boolean; stopping?: () => boolean };
export type Task = {
  name: string;
  run: (db: Db, now: Date, opts?: RunOptions) => Promise<number>;
  nextDue?: (db: Db, after: Date) => Promise<Date | null>;
  stop?: () => Promise<void>;
  /**
   * Upkeep (retention purges, the dashboard's roll-up, vacuum) instead of work someone waits
   * for: it runs when its own next time comes, and never makes the test clock stop. After a run
   * that found nothing, `next` answers when it will next have something to do (null: nothing in
   * view), and it is not run again before then, nor later than `every` from then (a row that
   * became due sooner than foreseen waits at most that long). While it finds work it runs again
   * at once, so a backlog drains batch by batch.
   */
  upkeep?: { every: number; next?: (db: Db, after: Date) => Promise<Date | null> };
};
export type JobHandler = (db: Db, job: Job, now: Date) => Promise<void>;

/**
 * What the worker runs. The domain registers its tasks and job handlers at process start; this
 * module runs whatever is registered and knows nothing of what the work is. Process-wide, since
 * route handlers and instrumentation are separate module instances in one process.
 */
type Registry = { tasks: Task[]; handlers: Map<string, JobHandler> };
const registry: Registry = ((globalThis as { __billingJobs?: Registry }).__billingJobs ??= { tasks: [], handlers: new Map() });

export function registerTask(task: Task): void {
  if (!registry.tasks.some((t) => t.name === task.name)) registry.tasks.push(task);
}
export function registerJobHandler(kind: string, handler: JobHandler): void {
  registry.handlers.set(kind, handler);
}

const JOBS_TASK = 'jobs';

/** The worker's own task: run the queued jobs with their registered handlers. */
registerTask({
  name: JOBS_TASK,
  run: async (db, now, opts) => {
    // `now` is the run's time, which a long run of rounds leaves behind: the lease counts from the claim.
    const jobs = await claimJobs(db, now, 20, laterOf(now, clockNow()));
    for (const [i, job] of jobs.entries()) {
      if (opts?.stopping?.()) {
        await releaseJobs(db, jobs.slice(i), now);
        return i;
      }
      // The claim's lease is counted from its own time: a job started later gets a lease of its own.
      if (i > 0 && !(await holdJob(db, job, clockNow()))) continue;
      const handler = registry.handlers.get(job.kind);
      try {
        if (!handler) throw new Error(`no handler for job kind ${job.kind}`);
        await handler(db, job, now);
        await finishJob(db, job, now);
      } catch (err) {
        if (err instanceof DeferJob) {
          log.info({ job_id: job.id, kind: job.kind, reason: err.message, delay_ms: err.delayMs }, 'job deferred');
          await deferJob(db, job, new Date(laterOf(now, clockNow()).getTime() + err.delayMs), now);
          continue;
        }
        log.error({ job_id: job.id, kind: job.kind, err }, 'job failed');
        await failJob(db, job, err instanceof Error ? err.message : String(err), now);
      }
    }
    return jobs.length;
  },
  nextDue: nextQueuedJob,
});

function laterOf(a: Date, b: Date): Date {
  return a.getTime() >= b.getTime() ? a : b;
}

/** Work stepped with nothing registered would silently do nothing: a process that forgot to register fails instead. */
function requireTasks(): void {
  if (!registry.tasks.some((t) => t.name !== JOBS_TASK)) throw new Error('No worker tasks are registered: register the domain\'s tasks at process start before running due work.');
}

/**
 * Runs everything due at `now` until nothing is left (in the background, until nothing more can
 * start). A task that fails (observeTask logs and counts it) sits out the rest of the run, and
 * the others still run: one task's trouble must not stop renewals, refills and webhooks. Outside
 * the background the first failure is thrown once the others are done.
 */
export async function runDueWork(db: Db, now: Date, opts: RunOptions = {}): Promise<number> {
  requireTasks();
  let total = 0;
  const failed = new Map<string, unknown>();
  const schedule = upkeepSchedule(db);
  for (let round = 0; round < 1000; round++) {
    let handled = 0;
    for (const task of registry.tasks) {
      if (opts.stopping?.()) return total + handled;
      if (failed.has(task.name)) continue;
      if (task.upkeep && !upkeepDue(schedule.get(task.name), now)) continue;
      try {
        const items = await observeTask(task.name, () => task.run(db, now, opts));
        handled += items;
        if (task.upkeep) schedule.set(task.name, { ran: now.getTime(), next: items > 0 ? now.getTime() : await nextUpkeep(db, task.upkeep, now) });
      } catch (err) {
        failed.set(task.name, err);
      }
    }
    total += handled;
    if (!handled) break;
  }
  if (failed.size && !opts.background) throw failed.values().next().value;
  return total;
}

/** When an upkeep task last ran and when it runs next (epoch ms of the clock). */
type UpkeepTimes = { ran: number; next: number };
/** Per database handle, by task name. Process-wide: the worker's and the routes' module instances share it. */
const upkeepTimes: WeakMap<object, Map<string, UpkeepTimes>> = ((globalThis as { __billingUpkeep?: WeakMap<object, Map<string, UpkeepTimes>> }).__billingUpkeep ??= new WeakMap());

function upkeepSchedule(db: Db): Map<string, UpkeepTimes> {
  let schedule = upkeepTimes.get(db);
  if (!schedule) upkeepTimes.set(db, (schedule = new Map()));
  return schedule;
}

/** Never run in this process, its time come, or a clock set back before its last run. */
function upkeepDue(times: UpkeepTimes | undefined, now: Date): boolean {
  return !times || now.getTime() >= times.next || now.getTime() < times.ran;
}

async function nextUpkeep(db: Db, upkeep: NonNullable<Task['upkeep']>, now: Date): Promise<number> {
  const latest = now.getTime() + upkeep.every;
  const next = upkeep.next ? await upkeep.next(db, now) : null;
  return next ? Math.max(now.getTime(), Math.min(next.getTime(), latest)) : latest;
}

/** The registered tasks (their `nextDue` tells how late their work is: lib/metrics). */
export async function registeredTasks(): Promise<readonly Task[]> {
  return registry.tasks;
}

/** The earliest time any task has work due, to step the test clock through it in order. */
export async function nextDueAt(db: Db, after: Date): Promise<Date | null> {
  requireTasks();
  let earliest: Date | null = null;
  for (const task of registry.tasks) {
    const at = task.nextDue ? await task.nextDue(db, after) : null;
    if (at && (!earliest || at < earliest)) earliest = at;
  }
  return earliest;
}

const TEST_CLOCK_KEY = 'test_clock';

export async function syncTestClock(db: Db): Promise<void> {
  if (!isTestClock()) return;
  const [row] = await query<{ value: { now: number } }>(db, sql`select value from settings where key = ${TEST_CLOCK_KEY}`);
  if (row) setTestTime(row.value.now);
}

/** Stores the test clock; like the clock itself, the shared row only ever moves forward. */
async function saveTestClock(db: Db, ms: number): Promise<void> {
  await query(
    db,
    sql`insert into settings (key, value) values (${TEST_CLOCK_KEY}, ${JSON.stringify({ now: ms })}::jsonb)
      on conflict (key) do update set value = excluded.value
        where (settings.value->>'now')::bigint < (excluded.value->>'now')::bigint`,
  );
}

/**
 * Moves the test clock forward, running every piece of due work at its own due time in order
 * (a year of monthly renewals happens month by month), and returns when all is done.
 */
export async function advanceTestClock(db: Db, seconds: number): Promise<Date> {
  // The process's own background tick neither runs beside the advance nor is overtaken by it:
  // stepping the clock past the leases of work it is doing would let the advance run that work again.
  loop.advancing++;
  // Advances take turns: each moves the clock by its own seconds from where the one before left
  // it (two at once counted from the same time would move it once, past each other's work).
  const turn = loop.advances.then(async () => {
    await loop.current;
    return advanceSteps(db, seconds);
  });
  loop.advances = turn.catch(() => {});
  try {
    return await turn;
  } finally {
    loop.advancing--;
  }
}

async function advanceSteps(db: Db, seconds: number): Promise<Date> {
  await syncTestClock(db);
  const target = clockNow().getTime() + seconds * 1000;
  for (let step = 0; step < 100_000; step++) {
    await runDueWork(db, clockNow());
    const due = await nextDueAt(db, clockNow());
    if (!due || due.getTime() > target) break;
    setTestTime(due.getTime());
    await saveTestClock(db, due.getTime());
  }
  setTestTime(target);
  await saveTestClock(db, target);
  await runDueWork(db, clockNow());
  return clockNow();
}

type LoopState = { timer?: NodeJS.Timeout; running: boolean; stopping: boolean; migrated: boolean; current?: Promise<void>; advancing: number; advances: Promise<unknown> };
const loop: LoopState = ((globalThis as { __billingWorkerLoop?: LoopState }).__billingWorkerLoop ??= { running: false, stopping: false, migrated: false, advancing: 0, advances: Promise.resolve() });
loop.advancing ??= 0;
loop.advances ??= Promise.resolve();

/** The in-process worker loop: ticks every WORKER_INTERVAL_MS (default 1 s). */
export function startWorker(): void {
  if (loop.timer) return;
  loop.stopping = false;
  const interval = setting('WORKER_INTERVAL_MS');
  loop.timer = setInterval(() => void tick(), interval);
  loop.timer.unref?.();
}

/**
 * Stops ticking and claiming; resolves once the running tick is done (what it claimed and did
 * not start is given back) and the work it left running (sends in flight) is recorded.
 */
export async function stopWorker(): Promise<void> {
  loop.stopping = true;
  if (loop.timer) clearInterval(loop.timer);
  loop.timer = undefined;
  await loop.current;
  for (const task of registry.tasks) await task.stop?.();
}

/** Until `npm run db:migrate` has run (MIGRATE=0), the loop waits instead of failing every tick. */
async function schemaReady(db: Db): Promise<boolean> {
  if (!loop.migrated) loop.migrated = (await pendingMigrations(db)).length === 0;
  return loop.migrated;
}

export async function tick(): Promise<void> {
  if (loop.running || loop.stopping || loop.advancing > 0) return;
  loop.running = true;
  loop.current = (async () => {
    try {
      const { db } = await getDatabase();
      if (!(await schemaReady(db))) return;
      await syncTestClock(db);
      await runDueWork(db, clockNow(), { background: true, stopping: () => loop.stopping });
    } catch (err) {
      log.error({ err }, 'worker tick failed');
    } finally {
      loop.running = false;
    }
  })();
  await loop.current;
}

/** Tests only: what a test file left running in the worker: the loop's timer, a tick or an advance of the test clock. */
export function workerLeftRunning(): string | null {
  if (loop.timer) return 'the worker loop is still ticking (startWorker without stopWorker)';
  if (loop.running) return 'a worker tick is still running';
  if (loop.advancing > 0) return 'an advance of the test clock is still running';
  return null;
}

/**
 * Tests only: the worker as a new process has it: only its own task registered (the next file
 * registers the domain's again, `useTestDatabase`), no job handlers, no loop. A file's own tasks
 * and handlers would otherwise run in every file after it.
 */
export function resetWorkerForTests(): void {
  testRunnerOnly('resetWorkerForTests');
  if (loop.timer) clearInterval(loop.timer);
  const own = registry.tasks.filter((t) => t.name === JOBS_TASK);
  registry.tasks.splice(0, registry.tasks.length, ...own);
  registry.handlers.clear();
  Object.assign(loop, { timer: undefined, running: false, stopping: false, migrated: false, current: undefined, advancing: 0, advances: Promise.resolve() });
}
