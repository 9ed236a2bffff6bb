import fs from 'node:fs';
import path from 'node:path';
// @ts-expect-error plain ESM config
import nextConfig from '../../next.config.mjs';

/**
 * Dispatches requests to the real route files under app/, applying next.config's rewrites and
 * Next's matching order (static, then dynamic, then catch-all), so tests run every handler
 * in-process without a server.
 */
type Route = { segments: string[]; file: string };
type Rewrite = { source: string; destination: string };

const appDir = path.resolve(__dirname, '../../app');
/** The route table and next.config's rewrites, read once; concurrent first calls wait for the same read. */
let table: Promise<{ routes: Route[]; rewrites: Rewrite[] }> | null = null;

function loadTable(): Promise<{ routes: Route[]; rewrites: Rewrite[] }> {
  table ??= (async () => {
    const routes: Route[] = [];
    scan(appDir, [], routes);
    const rw = await nextConfig.rewrites();
    return { routes, rewrites: rw.beforeFiles as Rewrite[] };
  })();
  return table;
}

function scan(dir: string, segments: string[], out: Route[]) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      const seg = entry.name;
      scan(path.join(dir, seg), /^\(.*\)$/.test(seg) ? segments : [...segments, seg], out);
    } else if (entry.name === 'route.ts') out.push({ segments, file: path.join(dir, entry.name) });
  }
}

function match(route: Route, parts: string[]): Record<string, string | string[]> | null {
  const params: Record<string, string | string[]> = {};
  for (let i = 0; i < route.segments.length; i++) {
    const seg = route.segments[i];
    const catchAll = /^\[\.\.\.(\w+)\]$/.exec(seg);
    if (catchAll) {
      if (i >= parts.length) return null;
      params[catchAll[1]] = parts.slice(i);
      return params;
    }
    if (i >= parts.length) return null;
    const dynamic = /^\[(\w+)\]$/.exec(seg);
    if (dynamic) params[dynamic[1]] = parts[i];
    else if (seg !== parts[i]) return null;
  }
  return route.segments.length === parts.length ? params : null;
}

function rank(route: Route): number[] {
  return route.segments.map((s) => (s.startsWith('[...') ? 2 : s.startsWith('[') ? 1 : 0));
}

/** Turns a next.config rewrite source into a RegExp: `:name`, `:name*` and `:name(regex)`. */
function compileSource(source: string): { re: RegExp; names: string[] } {
  const names: string[] = [];
  let out = '';
  for (let i = 0; i < source.length; ) {
    const m = /^:(\w+)/.exec(source.slice(i));
    if (!m) {
      out += source[i].replace(/[.+?^${}()|[\]\\]/g, '\\$&');
      i++;
      continue;
    }
    names.push(m[1]);
    i += m[0].length;
    if (source[i] === '(') {
      let depth = 0;
      let j = i;
      for (; j < source.length; j++) {
        if (source[j] === '\\') j++;
        else if (source[j] === '(') depth++;
        else if (source[j] === ')' && --depth === 0) break;
      }
      out += `(${source.slice(i + 1, j)})`;
      i = j + 1;
    } else if (source[i] === '*') {
      out += '(.*)';
      i++;
    } else out += '([^/]+)';
  }
  return { re: new RegExp(`^${out}$`), names };
}

function applyRewrites(rewrites: Rewrite[], pathname: string): string {
  for (const r of rewrites) {
    const { re, names } = compileSource(r.source);
    const m = re.exec(pathname);
    if (!m) continue;
    let dest = r.destination;
    names.forEach((n, i) => {
      dest = dest.replace(`:${n}*`, m[i + 1] ?? '').replace(`:${n}`, m[i + 1] ?? '');
    });
    return dest.replace(/\/$/, '') || '/';
  }
  return pathname;
}

export async function dispatch(req: Request): Promise<Response> {
  const { routes, rewrites } = await loadTable();
  const url = new URL(req.url);
  const pathname = applyRewrites(rewrites, url.pathname);
  const parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  const candidates = routes
    .map((r) => ({ r, params: match(r, parts) }))
    .filter((c) => c.params !== null)
    .sort((a, b) => {
      const ra = rank(a.r);
      const rb = rank(b.r);
      for (let i = 0; i < Math.max(ra.length, rb.length); i++) if ((ra[i] ?? 0) !== (rb[i] ?? 0)) return (ra[i] ?? 0) - (rb[i] ?? 0);
      return 0;
    });
  const found = candidates[0];
  if (!found) return new Response('Not Found', { status: 404 });
  const mod = (await import(found.r.file)) as Record<string, (req: Request, ctx: unknown) => Promise<Response>>;
  const handler = mod[req.method];
  if (!handler) return new Response(null, { status: 405 });
  // As Next.js does: parameters arrive decoded, once.
  return handler(req, { params: Promise.resolve(found.params!) });
}

/** Every route file with the HTTP methods it exports, as `/segment/[param]` paths. */
export async function listRoutes(): Promise<{ path: string; methods: string[] }[]> {
  const found: Route[] = [];
  scan(appDir, [], found);
  const out: { path: string; methods: string[] }[] = [];
  for (const r of found) {
    const mod = (await import(r.file)) as Record<string, unknown>;
    const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => typeof mod[m] === 'function' && !(mod[m] as { notAllowed?: true }).notAllowed);
    out.push({ path: '/' + r.segments.join('/'), methods });
  }
  return out;
}
