import { performance } from 'node:perf_hooks';
import { log } from '../log';
import { metrics } from './registry';

/**
 * One run of a worker task, logged and counted: items handled, duration, and errors (the error
 * goes on to the worker loop, which handles it as before). A run that found nothing to do logs at
 * debug only: the loop looks every second.
 */
export async function observeTask(task: string, run: () => Promise<number>): Promise<number> {
  const started = performance.now();
  const m = metrics();
  try {
    const items = await run();
    const seconds = (performance.now() - started) / 1000;
    m.taskRuns.inc({ task, outcome: 'ok' });
    m.taskDuration.observe({ task }, seconds);
    if (items) m.taskItems.inc({ task }, items);
    const line = { task, items, duration_ms: Math.round(seconds * 1e5) / 100 };
    if (items) log.info(line, `worker task ${task}: ${items} handled`);
    else log.debug(line, `worker task ${task}: nothing due`);
    return items;
  } catch (err) {
    const seconds = (performance.now() - started) / 1000;
    m.taskRuns.inc({ task, outcome: 'error' });
    m.taskDuration.observe({ task }, seconds);
    log.error({ task, duration_ms: Math.round(seconds * 1e5) / 100, err }, `worker task ${task} failed`);
    throw err;
  }
}
