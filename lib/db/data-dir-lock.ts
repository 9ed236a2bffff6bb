import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { log } from '../log';

// One process at a time on a DATA_DIR: PGlite takes no lock of its own, and two processes on one
// directory silently lose data.

export class DataDirLockedError extends Error {}

/**
 * A lock's holder, as its LOCK file names it: process id, host name, process-id namespace (two
 * containers can share a host name, never a namespace; their process ids mean nothing to each
 * other) and a token of its own.
 */
type LockHolder = { pid: number; host: string; ns: string; token: string; boot?: string };
/** The holder touches its LOCK this often; one untouched for LOCK_STALE_MS elsewhere is taken as left behind. */
const LOCK_HEARTBEAT_MS = 5_000;
const LOCK_STALE_MS = 30_000;
/** The tokens of the locks this process holds, across its module instances. */
const heldHere: Set<string> = ((globalThis as { __billingDataDirLocks?: Set<string> }).__billingDataDirLocks ??= new Set());

function pidNamespace(): string {
  try {
    return fs.readlinkSync('/proc/self/ns/pid');
  } catch {
    return '';
  }
}

/** This boot of the machine: a lock written before a reboot names a process that is gone, whatever its id is now. */
function bootId(): string {
  try {
    return fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return '';
  }
}

function readLock(lockPath: string): { text: string; holder: LockHolder | null; ageMs: number } {
  const text = fs.readFileSync(lockPath, 'utf8');
  const ageMs = Date.now() - fs.statSync(lockPath).mtimeMs;
  // Older versions wrote the bare process id, on this host.
  if (/^\d+$/.test(text.trim())) return { text, holder: { pid: Number(text.trim()), host: os.hostname(), ns: pidNamespace(), token: '' }, ageMs };
  try {
    const h = JSON.parse(text) as LockHolder;
    const ok = typeof h?.pid === 'number' && typeof h.host === 'string' && typeof h.token === 'string';
    return { text, holder: ok ? { ...h, ns: typeof h.ns === 'string' ? h.ns : '', boot: typeof h.boot === 'string' ? h.boot : undefined } : null, ageMs };
  } catch {
    return { text, holder: null, ageMs };
  }
}

/**
 * Takes DATA_DIR for this process: PGlite takes no lock itself, and two processes on one data
 * directory lose data. The LOCK file names its holder (LockHolder), which touches it every 5 s.
 * A lock is left behind, and taken over, when its holder shares this process's host and
 * namespace and its process is gone (or its id is now this process's, after a container
 * restart, or it was written before the machine last booted), or when it is elsewhere (another
 * container on the same volume) and has not been touched for 30 s (a lock elsewhere that is fresh is watched that long first). A LOCK still
 * being written counts as held. A stale lock is moved aside and compared before it goes, so two
 * processes taking it over at once do not both go on holding it: a holder whose lock was removed
 * or taken stops at its next heartbeat.
 */
export async function lockDataDir(dataDir: string, { watchMs = LOCK_STALE_MS + LOCK_HEARTBEAT_MS }: { watchMs?: number } = {}): Promise<() => void> {
  const lockPath = path.join(dataDir, 'LOCK');
  // A lock held elsewhere is watched this long before it counts as in use: a container restarted
  // after an unclean stop (a new namespace) finds its own last lock, which goes stale meanwhile.
  const watchUntil = Date.now() + watchMs;
  let told = false;
  const me: LockHolder = { pid: process.pid, host: os.hostname(), ns: pidNamespace(), token: randomUUID(), boot: bootId() };
  const mine = () => lockState(lockPath, me.token) === 'mine';
  for (let attempt = 0; attempt < 1000; attempt++) {
    try {
      const fd = fs.openSync(lockPath, 'wx');
      fs.writeSync(fd, JSON.stringify(me));
      fs.closeSync(fd);
      let unreadable = 0;
      const heartbeat = setInterval(() => {
        const state = lockState(lockPath, me.token);
        // EMFILE, EIO...: not a sign that the lock went, and it is still touched so that it does
        // not go stale meanwhile; unreadable for as long as a lock takes to go stale, it is given up.
        unreadable = state === 'unreadable' ? unreadable + 1 : 0;
        if (unreadable * LOCK_HEARTBEAT_MS >= LOCK_STALE_MS) {
          log.fatal(`The lock on ${path.resolve(dataDir)} could not be read for ${LOCK_STALE_MS / 1000} s: stopping before another process takes it over.`);
          process.exit(1);
        }
        if (state === 'lost') {
          // Removed or taken by another process: two writers would corrupt the database.
          log.fatal(`The lock on ${path.resolve(dataDir)} was removed or taken by another process: stopping before two processes write the embedded database.`);
          process.exit(1);
        }
        const t = new Date();
        try {
          fs.utimesSync(lockPath, t, t);
        } catch {
          /* gone meanwhile */
        }
      }, LOCK_HEARTBEAT_MS);
      heartbeat.unref();
      heldHere.add(me.token);
      const release = () => {
        // A process that opens and closes many (the tests' workers) keeps no listener per lock.
        process.off('exit', release);
        clearInterval(heartbeat);
        heldHere.delete(me.token);
        try {
          if (mine()) fs.unlinkSync(lockPath);
        } catch {
          /* already gone */
        }
      };
      process.once('exit', release);
      return release;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let seen: ReturnType<typeof readLock>;
      try {
        seen = readLock(lockPath);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue; // released meanwhile
        throw e;
      }
      const { holder, ageMs } = seen;
      const here = holder !== null && holder.host === me.host && holder.ns === me.ns;
      // This very process holds it already (another module instance opened the database).
      if (here && heldHere.has(holder.token)) return () => {};
      // Here, a lock from before the machine's last boot is left behind: its process id may now be another's.
      const rebooted = here && Boolean(holder.boot && me.boot && holder.boot !== me.boot);
      const held = here ? !rebooted && holder.pid !== process.pid && isAlive(holder.pid) : ageMs < LOCK_STALE_MS;
      if (held && !here && Date.now() < watchUntil) {
        if (!told) log.warn(`${path.resolve(dataDir)} is locked by process ${holder?.pid ?? '?'} on host ${holder?.host ?? '?'}; waiting up to ${Math.round(watchMs / 1000)} s to see whether it is still in use`);
        told = true;
        await new Promise((r) => setTimeout(r, 1_000));
        continue;
      }
      if (held) {
        const who = holder === null ? 'another process' : `process ${holder.pid}${here ? '' : ` on host ${holder.host}`}`;
        throw new DataDirLockedError(
          `The embedded database in ${path.resolve(dataDir)} is in use by ${who}. ` +
            `Stop that process, or use another DATA_DIR, or run on PostgreSQL with DATABASE_URL to share a database between processes.`,
        );
      }
      takeOverStale(lockPath, seen.text, me.token);
    }
  }
  throw new DataDirLockedError(`Could not lock ${path.resolve(dataDir)}`);
}

/** Whether the LOCK is still this holder's: `lost` only when it was read and is another's, or is gone. */
function lockState(lockPath: string, token: string): 'mine' | 'lost' | 'unreadable' {
  try {
    return readLock(lockPath).holder?.token === token ? 'mine' : 'lost';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'lost' : 'unreadable';
  }
}

/**
 * Removes a lock left behind, only if it is still the one judged stale (`text`): it is moved
 * aside first, so of two processes taking it over at once only one moves it, and a lock another
 * process made meanwhile is put back.
 */
function takeOverStale(lockPath: string, text: string, token: string): void {
  // Joined, not a template literal: the build's file tracing reads `${a}.${b}` as a pattern
  // matching every file of the project, and the image then carried the whole repository.
  const aside = path.join(path.dirname(lockPath), 'LOCK.' + token);
  try {
    fs.renameSync(lockPath, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (fs.readFileSync(aside, 'utf8') !== text) {
    try {
      // Put back only where no lock is (an exclusive copy works on every filesystem).
      fs.copyFileSync(aside, lockPath, fs.constants.COPYFILE_EXCL);
    } catch (err) {
      // EEXIST: a third process made one meanwhile and holds the directory; the one put aside
      // finds its lock gone at its next heartbeat and stops.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  fs.unlinkSync(aside);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
