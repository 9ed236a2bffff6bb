import { logTo } from '../log';

/** Captures the process logger's lines (parsed) until `stop`. */
export function captureLogs(level = 'trace') {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const undo = logTo(
    {
      write(line: string) {
        raw.push(line);
        lines.push(JSON.parse(line) as Record<string, unknown>);
      },
    },
    level,
  );
  return { lines, text: () => raw.join(''), stop: undo };
}
