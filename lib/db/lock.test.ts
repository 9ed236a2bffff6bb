import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DataDirLockedError, lockDataDir } from './client';

const dirs: string[] = [];
const newDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lock-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  vi.useRealTimers();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** A LOCK as another holder would have left it, `ageMs` since it was last touched. */
function leave(dir: string, content: string, ageMs = 0) {
  const file = path.join(dir, 'LOCK');
  fs.writeFileSync(file, content);
  const t = new Date(Date.now() - ageMs);
  fs.utimesSync(file, t, t);
}
const ns = (() => {
  try {
    return fs.readlinkSync('/proc/self/ns/pid');
  } catch {
    return '';
  }
})();
/** Without the watch for a lock held elsewhere: judged at once. */
const now = { watchMs: 0 };
const holder = (pid: number, host: string, token = 'theirs', namespace = ns) => JSON.stringify({ pid, host, ns: namespace, token });

/** Every read of a LOCK fails with `code` (as when out of file descriptors, or on a failing disk) until restored. */
function lockUnreadable(code: 'EMFILE' | 'EIO') {
  const read = fs.readFileSync;
  return vi.spyOn(fs, 'readFileSync').mockImplementation(((file: fs.PathOrFileDescriptor, ...rest: unknown[]) => {
    if (String(file).endsWith('LOCK')) throw Object.assign(new Error(`${code}: the LOCK cannot be read`), { code });
    return (read as (...a: unknown[]) => unknown)(file, ...rest);
  }) as typeof fs.readFileSync);
}

describe('the DATA_DIR lock', () => {
  it('names its holder, lets the same process open the database again, and goes with the last release', async () => {
    const dir = newDir();
    const release = await lockDataDir(dir, now);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'LOCK'), 'utf8'))).toMatchObject({ pid: process.pid, host: os.hostname() });
    const again = await lockDataDir(dir, now);
    again();
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(true);
    release();
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(false);
  });

  it('is refused while another host holds it, and taken over once that host stopped touching it for a minute', async () => {
    const dir = newDir();
    // Another container on the same volume: its process id says nothing here (it may even be ours).
    leave(dir, holder(process.pid, 'other-container'), 5_000);
    await expect(lockDataDir(dir, now)).rejects.toBeInstanceOf(DataDirLockedError);
    await expect(lockDataDir(dir, now)).rejects.toThrow(`is in use by process ${process.pid} on host other-container`);
    leave(dir, holder(process.pid, 'other-container'), 61_000);
    (await lockDataDir(dir, now))();
  });

  it('held elsewhere, is watched before it counts as in use: one left behind goes stale meanwhile and is taken', async () => {
    const dir = newDir();
    // A container restarted after an unclean stop finds its own last lock, 29 s old.
    leave(dir, holder(1, os.hostname(), 'before-restart', 'pid:[1]'), 29_000);
    const started = Date.now();
    (await lockDataDir(dir, { watchMs: 5_000 }))();
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('stops its holder at the next heartbeat once it was removed or taken: two writers would corrupt the database', async () => {
    const dir = newDir();
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
    try {
      const release = await lockDataDir(dir, now);
      vi.advanceTimersByTime(5_000);
      expect(exit).not.toHaveBeenCalled();
      leave(dir, holder(2 ** 22 + 1, 'other-container', 'taker'));
      vi.advanceTimersByTime(5_000);
      expect(exit).toHaveBeenCalledWith(1);
      release();
      // Its release leaves the other holder's lock alone.
      expect(JSON.parse(fs.readFileSync(path.join(dir, 'LOCK'), 'utf8')).token).toBe('taker');
    } finally {
      exit.mockRestore();
    }
  });

  it('does not stop its holder when its LOCK cannot be read for a moment (out of file descriptors), only once it is gone', async () => {
    const dir = newDir();
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
    const unreadable = lockUnreadable('EMFILE');
    try {
      const release = await lockDataDir(dir, now);
      const lock = path.join(dir, 'LOCK');
      const old = new Date(Date.now() - 60_000);
      fs.utimesSync(lock, old, old);
      vi.advanceTimersByTime(10_000);
      expect(exit).not.toHaveBeenCalled();
      // Still touched meanwhile, so that it does not look left behind to a process elsewhere.
      expect(Date.now() - fs.statSync(lock).mtimeMs).toBeLessThan(10_000);
      unreadable.mockRestore();
      fs.rmSync(path.join(dir, 'LOCK'));
      vi.advanceTimersByTime(5_000);
      expect(exit).toHaveBeenCalledWith(1);
      release();
    } finally {
      unreadable.mockRestore();
      exit.mockRestore();
    }
  });

  it('gives its lock up (exits) when the LOCK stays unreadable for as long as a lock takes to go stale', async () => {
    const dir = newDir();
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
    const unreadable = lockUnreadable('EIO');
    try {
      const release = await lockDataDir(dir, now);
      vi.advanceTimersByTime(25_000);
      expect(exit).not.toHaveBeenCalled();
      vi.advanceTimersByTime(5_000);
      expect(exit).toHaveBeenCalledWith(1);
      release();
    } finally {
      unreadable.mockRestore();
      exit.mockRestore();
    }
  });

  it('counts a holder with this host name but another process namespace (a container sharing the host name) as elsewhere', async () => {
    const dir = newDir();
    leave(dir, holder(2 ** 22 + 12345, os.hostname(), 'theirs', 'pid:[1]'), 5_000);
    await expect(lockDataDir(dir, now)).rejects.toThrow(`is in use by process ${2 ** 22 + 12345} on host ${os.hostname()}`);
    leave(dir, holder(2 ** 22 + 12345, os.hostname(), 'theirs', 'pid:[1]'), 31_000);
    (await lockDataDir(dir, now))();
  });

  it('on this host, is refused while its process lives and taken over once it is gone or its id is now ours', async () => {
    const dir = newDir();
    leave(dir, holder(process.ppid, os.hostname()));
    await expect(lockDataDir(dir, now)).rejects.toThrow(`is in use by process ${process.ppid}.`);
    // A process id no process has.
    leave(dir, holder(2 ** 22 + 12345, os.hostname()));
    (await lockDataDir(dir, now))();
    // Our own id, from a process before a restart (a container's PID 1), and the old format.
    leave(dir, holder(process.pid, os.hostname()));
    (await lockDataDir(dir, now))();
    leave(dir, String(process.pid));
    (await lockDataDir(dir, now))();
  });

  it('on this host, takes over a lock written before the machine last booted, whatever process has its id now', async () => {
    const dir = newDir();
    const boot = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const before = (b: string) => JSON.stringify({ ...JSON.parse(holder(process.ppid, os.hostname())), boot: b });
    // A live process has the id now (early boot hands out low ids again).
    leave(dir, before(boot));
    await expect(lockDataDir(dir, now)).rejects.toThrow(`is in use by process ${process.ppid}.`);
    leave(dir, before('00000000-0000-0000-0000-000000000000'));
    (await lockDataDir(dir, now))();
  });

  it('is not taken from a process that took the stale lock over a moment before', async () => {
    const dir = newDir();
    const file = path.join(dir, 'LOCK');
    leave(dir, holder(2 ** 22 + 12345, 'gone-container'), 120_000);
    // Another container takes the stale lock over between our look at it and our move of it.
    const fresh = holder(2 ** 22 + 1, 'other-container', 'fresh');
    const rename = fs.renameSync;
    const spy = vi.spyOn(fs, 'renameSync').mockImplementationOnce((from, to) => {
      fs.writeFileSync(file, fresh);
      rename(from, to);
    });
    try {
      await expect(lockDataDir(dir, now)).rejects.toThrow(`is in use by process ${2 ** 22 + 1} on host other-container`);
    } finally {
      spy.mockRestore();
    }
    expect(fs.readFileSync(file, 'utf8')).toBe(fresh);
    expect(fs.readdirSync(dir)).toEqual(['LOCK']);
  });

  it('counts a LOCK still being written as held, unless it was left like that long ago', async () => {
    const dir = newDir();
    leave(dir, '');
    await expect(lockDataDir(dir, now)).rejects.toThrow('is in use by another process');
    leave(dir, '', 61_000);
    (await lockDataDir(dir, now))();
  });

  it('is touched by its holder every 5 seconds, so other hosts see it held', async () => {
    const dir = newDir();
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const release = await lockDataDir(dir, now);
    const file = path.join(dir, 'LOCK');
    const old = new Date(Date.now() - 3600_000);
    fs.utimesSync(file, old, old);
    vi.advanceTimersByTime(5_000);
    expect(Date.now() - fs.statSync(file).mtimeMs).toBeLessThan(5_000);
    release();
  });
});
