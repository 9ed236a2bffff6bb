import { isStorable } from '../api/input';

/**
 * What is wrong with a console address, or null. Its pages hand path segments and query values to
 * the database, which cannot take a NUL, and read each query parameter once: given twice, a
 * page would get a list where it reads a string. Either used to end in a 500; the address is
 * refused instead (proxy.ts answers 400 with this sentence).
 */
export function consoleAddressProblem(url: URL): string | null {
  let pathname: string;
  try {
    pathname = decodeURIComponent(url.pathname);
  } catch {
    return 'This address is not valid: its path is not well-formed percent-encoding.';
  }
  if (!isStorable(pathname)) return 'This address is not valid: its path contains a NUL character or an unpaired surrogate.';
  const seen = new Set<string>();
  for (const [key, value] of url.searchParams) {
    if (!isStorable(key) || !isStorable(value)) return `This address is not valid: its query parameter ${JSON.stringify(key)} contains a NUL character or an unpaired surrogate.`;
    if (seen.has(key)) return `This address is not valid: it gives the query parameter ${JSON.stringify(key)} more than once.`;
    seen.add(key);
  }
  return null;
}
