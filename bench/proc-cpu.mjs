// CPU time of a process tree, read from /proc (Linux): what the benchmarks charge to the server
// and to PostgreSQL.
import fs from 'node:fs';

/** The user and system CPU time (ms) of process `pid` and all its descendants, those still running. */
export function treeCpuMs(pid) {
  let ticks = 0;
  const visit = (p) => {
    try {
      const fields = statFields(p);
      ticks += Number(fields[11]) + Number(fields[12]);
      for (const t of fs.readdirSync(`/proc/${p}/task`)) {
        for (const c of fs.readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').split(' ').filter(Boolean)) visit(c);
      }
    } catch {
      /* gone */
    }
  };
  visit(pid);
  return ticks * 10; // USER_HZ is 100 on Linux
}

/** The parent of process `pid`. */
export function parentPid(pid) {
  return Number(statFields(pid)[1]);
}

/** /proc/<pid>/stat's fields after the command's name (state first). */
function statFields(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}
