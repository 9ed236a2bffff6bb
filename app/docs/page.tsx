import Link from 'next/link';
import { buildOpenApiDocument, type Json } from '@/lib/api/openapi/document';
import { deref, fieldRows, slug, typeLabel, constraints, type FieldRow } from '@/lib/api/openapi/reference';
import { STATUS, type ErrorType } from '@/lib/errors';

export const metadata = { title: 'API reference' };

const METHOD_STYLE: Record<string, string> = {
  get: 'bg-emerald-800',
  post: 'bg-blue-800',
  put: 'bg-amber-800',
  patch: 'bg-violet-800',
  delete: 'bg-red-800',
};

type Op = { method: string; path: string; op: Json };

/**
 * Tables for wide screens; on narrow ones each row becomes a small card (header row hidden,
 * cells stacked, each labelled from its data-label) so nothing needs sideways scrolling.
 */
const TABLE =
  'w-full text-left text-sm [&_td]:px-3 [&_td]:py-2 [&_th]:px-3 [&_th]:py-2 [&_tbody_tr]:border-t [&_tbody_tr]:border-slate-200 [&_tbody_tr]:align-top ' +
  'max-sm:block max-sm:[&_tbody]:block max-sm:[&_thead]:sr-only max-sm:[&_tr]:block max-sm:[&_tr]:py-2 max-sm:[&_td]:block max-sm:[&_th]:block max-sm:[&_td]:py-0.5 max-sm:[&_th]:py-0.5';
const LABELLED = "max-sm:before:mr-1 max-sm:before:font-sans max-sm:before:text-xs max-sm:before:text-slate-600 max-sm:before:content-[attr(data-label)_':']";

/** Text with `code` spans, as the document's descriptions write them. */
function Inline({ text }: { text: string }) {
  const parts = text.split(/(`[^`]+`)/g);
  return (
    <>
      {parts.map((p, i) =>
        p.startsWith('`') && p.endsWith('`') && p.length > 1 ? (
          <code key={i} className="rounded bg-slate-100 px-1 font-mono text-[0.9em] break-words">
            {p.slice(1, -1)}
          </code>
        ) : (
          p
        ),
      )}
    </>
  );
}

/** The document's description: `## ` headings and paragraphs. */
function Markdown({ text, headingLevel }: { text: string; headingLevel: 'h2' | 'h3' }) {
  const H = headingLevel;
  return (
    <>
      {text.split(/\n\s*\n/).map((block, i) => {
        const lines = block.trim().split('\n');
        if (lines[0].startsWith('## ')) {
          const rest = lines.slice(1).join(' ').trim();
          return (
            <div key={i}>
              <H id={`overview-${slug(lines[0].slice(3))}`} className="mt-6 text-lg font-semibold">
                {lines[0].slice(3)}
              </H>
              {rest && (
                <p className="mt-2 text-slate-800">
                  <Inline text={rest} />
                </p>
              )}
            </div>
          );
        }
        return (
          <p key={i} className="mt-2 text-slate-800">
            <Inline text={lines.join(' ')} />
          </p>
        );
      })}
    </>
  );
}

function MethodBadge({ method }: { method: string }) {
  return <span className={`${METHOD_STYLE[method] ?? 'bg-slate-700'} rounded px-2 py-0.5 font-mono text-xs font-bold tracking-wide text-white uppercase`}>{method}</span>;
}

/** Lets long snake_case names wrap at their underscores and dots, not mid-word. */
function Breakable({ name }: { name: string }) {
  return <>{name.split(/(?<=[_.])/).flatMap((part, i) => (i ? [<wbr key={i} />, part] : [part]))}</>;
}

function FieldTable({ rows, caption }: { rows: FieldRow[]; caption: string }) {
  if (!rows.length) return <p className="mt-2 text-sm text-slate-700">No fields.</p>;
  return (
    <div className="mt-2 overflow-x-auto rounded border border-slate-200">
      <table className={TABLE}>
        <caption className="sr-only">{caption}</caption>
        <thead className="bg-slate-100 text-slate-700">
          <tr>
            <th scope="col">Field</th>
            <th scope="col">Type</th>
            <th scope="col">Required</th>
            <th scope="col">Description</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.name}>
              <th scope="row" className="font-mono text-xs font-medium" style={r.depth ? { paddingLeft: `${0.75 + r.depth * 0.75}rem` } : undefined}>
                <Breakable name={r.name} />
              </th>
              <td data-label="Type" className={`font-mono text-xs ${LABELLED}`}>{r.type}</td>
              <td data-label="Required" className={LABELLED}>{r.required ? 'yes' : 'no'}</td>
              <td className="sm:min-w-[16rem]">
                <Inline text={r.description} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Example({ label, value }: { label: string; value: unknown }) {
  return (
    <details className="mt-2">
      <summary className="cursor-pointer text-sm text-blue-800 underline">{label}</summary>
      <pre className="mt-2 overflow-x-auto rounded bg-slate-900 p-3 text-xs text-slate-100">{JSON.stringify(value, null, 2)}</pre>
    </details>
  );
}

function Parameters({ doc, params, id, title = 'Parameters' }: { doc: Json; params: Json[]; id: string; title?: string }) {
  const list = params.map((p) => deref(doc, p)!).filter(Boolean);
  if (!list.length) return null;
  return (
    <>
      <h4 className="mt-4 font-semibold">{title}</h4>
      <div className="mt-2 overflow-x-auto rounded border border-slate-200">
        <table className={TABLE}>
          <caption className="sr-only">
            {title} of {id}
          </caption>
          <thead className="bg-slate-100 text-slate-700">
            <tr>
              <th scope="col">Name</th>
              <th scope="col">In</th>
              <th scope="col">Type</th>
              <th scope="col">Required</th>
              <th scope="col">Description</th>
            </tr>
          </thead>
          <tbody>
            {list.map((p) => (
              <tr key={`${p.in}-${p.name}`}>
                <th scope="row" className="font-mono text-xs font-medium">
                  <Breakable name={p.name} />
                </th>
                <td data-label="In" className={LABELLED}>{p.in}</td>
                <td data-label="Type" className={`font-mono text-xs ${LABELLED}`}>{typeLabel(p.schema)}</td>
                <td data-label="Required" className={LABELLED}>{p.required ? 'yes' : 'no'}</td>
                <td className="sm:min-w-[16rem]">
                  <Inline text={[p.description ?? '', ...constraints(p.schema, p.description)].filter(Boolean).join(' ')} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function authLine(op: Json): string {
  const s = (op.security ?? []) as Json[];
  if (!s.length) return 'No authentication.';
  if (s.some((x) => 'operatorBearer' in x)) return 'Operator: `Authorization: Bearer <ADMIN_TOKEN>`.';
  return 'Basic: company id as username, API key as password.';
}

function Operation({ doc, item }: { doc: Json; item: Op }) {
  const { op, method, path } = item;
  const id = op.operationId as string;
  const body = op.requestBody?.content?.['application/json'];
  const ok = op.responses['200'];
  const okContent = ok.content?.['application/json'];
  const data = okContent?.schema?.properties?.data;
  const errors = (op['x-error-types'] ?? []) as ErrorType[];
  return (
    <article id={id} aria-labelledby={`${id}-title`} className="mt-4 scroll-mt-4 rounded border border-slate-200 bg-white p-4">
      <h3 id={`${id}-title`} className="flex flex-wrap items-center gap-2 text-base font-semibold">
        <MethodBadge method={method} />
        <code className="font-mono text-sm break-all">{path}</code>
      </h3>
      <p className="mt-2 font-medium">{op.summary}</p>
      {op.description && (
        <p className="mt-1 text-slate-800">
          <Inline text={op.description} />
        </p>
      )}
      <p className="mt-2 text-sm text-slate-700">
        <Inline text={authLine(op)} />
      </p>

      <Parameters doc={doc} params={(op.parameters ?? []) as Json[]} id={`${method.toUpperCase()} ${path}`} />

      {body && (
        <>
          <h4 className="mt-4 font-semibold">
            Request body <span className="font-normal text-slate-700">({op.requestBody.required ? 'required' : 'optional'}; {typeLabel(body.schema)})</span>
          </h4>
          <FieldTable rows={fieldRows(doc, body.schema, 2)} caption={`Request body fields of ${method.toUpperCase()} ${path}`} />
          <Example label="Example request body" value={body.example} />
        </>
      )}

      <h4 className="mt-4 font-semibold">
        Response <span className="font-normal text-slate-700">200: {ok.description}</span>
      </h4>
      {data ? (
        <>
          <p className="mt-1 text-sm text-slate-700">
            <code className="font-mono">data</code>: {typeLabel(data)}
          </p>
          <FieldTable rows={fieldRows(doc, data, 2)} caption={`Response fields of ${method.toUpperCase()} ${path}`} />
          <Example label="Example response" value={okContent.example} />
        </>
      ) : (
        <p className="mt-1 text-sm text-slate-700">{okContent?.schema?.description}</p>
      )}

      {errors.length > 0 && (
        <>
          <h4 className="mt-4 font-semibold">Errors</h4>
          <ul className="mt-1 flex flex-wrap gap-2 text-sm">
            {errors.map((t) => (
              <li key={t}>
                <a href={`#error-${t}`} className="inline-block rounded border border-slate-300 px-2 py-0.5 font-mono text-xs text-blue-800 hover:underline">
                  {STATUS[t]} {t}
                </a>
              </li>
            ))}
          </ul>
        </>
      )}
    </article>
  );
}

function Webhook({ doc, name, item }: { doc: Json; name: string; item: Json }) {
  const op = item.post;
  const content = op.requestBody.content['application/json'];
  return (
    <article id={`webhook-${slug(name)}`} aria-labelledby={`webhook-${slug(name)}-title`} className="mt-4 rounded border border-slate-200 bg-white p-4">
      <h3 id={`webhook-${slug(name)}-title`} className="flex flex-wrap items-center gap-2 text-base font-semibold">
        <MethodBadge method="post" />
        <span>{op.summary}</span>
      </h3>
      <p className="mt-2 text-slate-800">
        <Inline text={op.description} />
      </p>
      <Parameters doc={doc} params={op.parameters} id={op.summary} title="Headers" />
      <h4 className="mt-4 font-semibold">Payload</h4>
      <FieldTable rows={fieldRows(doc, content.schema, 1)} caption={`Payload fields: ${op.summary}`} />
      {Object.entries(content.examples as Record<string, Json>).map(([k, ex]) => (
        <Example key={k} label={`Example: ${ex.summary}`} value={ex.value} />
      ))}
      <h4 className="mt-4 font-semibold">What the receiver answers</h4>
      <ul className="mt-1 list-disc pl-6 text-sm">
        {Object.entries(op.responses as Record<string, Json>).map(([status, r]) => (
          <li key={status}>
            <span className="font-mono">{status}</span>: {r.description}
          </li>
        ))}
      </ul>
    </article>
  );
}

export default function DocsPage() {
  const doc = buildOpenApiDocument();
  const byTag = new Map<string, Op[]>();
  for (const tag of doc.tags as Json[]) byTag.set(tag.name, []);
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item as Record<string, Json>)) byTag.get(op.tags[0])?.push({ method, path, op });
  }
  const examples = doc.components.examples as Record<string, Json>;

  return (
    <div className="min-h-screen">
      <a href="#content" className="sr-only focus:not-sr-only focus:absolute focus:top-2 focus:left-2 focus:rounded focus:bg-white focus:px-3 focus:py-2">
        Skip to content
      </a>
      <header className="border-b border-slate-200 bg-white">
        <div className="mx-auto flex max-w-6xl flex-wrap items-center justify-between gap-2 px-4 py-3">
          <Link href="/" className="font-semibold">
            Usage-based billing
          </Link>
          <nav aria-label="Documentation" className="flex flex-wrap gap-4 text-sm">
            <a href="/v1/openapi.json" className="text-blue-800 hover:underline">
              OpenAPI document (JSON)
            </a>
            <Link href="/console" className="text-blue-800 hover:underline">
              Console
            </Link>
          </nav>
        </div>
      </header>

      <div className="mx-auto max-w-6xl px-4 py-6 lg:grid lg:grid-cols-[15rem_minmax(0,1fr)] lg:gap-8">
        <nav aria-label="Reference contents" className="mb-6 text-sm lg:sticky lg:top-4 lg:mb-0 lg:max-h-[calc(100vh-2rem)] lg:self-start lg:overflow-y-auto">
          <h2 className="font-semibold">Contents</h2>
          <ul className="mt-2 flex flex-wrap gap-x-4 gap-y-1 lg:block lg:space-y-1">
            <li>
              <a href="#overview" className="text-blue-800 hover:underline">Overview</a>
            </li>
            {[...byTag.keys()].map((tag) => (
              <li key={tag}>
                <a href={`#tag-${slug(tag)}`} className="text-blue-800 hover:underline">{tag}</a>
                <ul className="mt-1 mb-2 hidden space-y-1 border-l border-slate-200 pl-3 lg:block">
                  {byTag.get(tag)!.map(({ op }) => (
                    <li key={op.operationId}>
                      <a href={`#${op.operationId}`} className="text-slate-700 hover:text-blue-800 hover:underline">{op.summary}</a>
                    </li>
                  ))}
                </ul>
              </li>
            ))}
            <li>
              <a href="#webhook-payloads" className="text-blue-800 hover:underline">Webhook payloads</a>
            </li>
            <li>
              <a href="#errors" className="text-blue-800 hover:underline">Errors</a>
            </li>
          </ul>
        </nav>

        <main id="content" className="min-w-0">
          <h1 className="text-2xl font-semibold">{doc.info.title}</h1>
          <p className="mt-1 text-slate-700">
            Version {doc.info.version}. {doc.info.summary} The machine-readable form is{' '}
            <a href="/v1/openapi.json" className="text-blue-800 underline">/v1/openapi.json</a> (OpenAPI 3.1).
          </p>

          <section id="overview" aria-labelledby="overview-title" className="mt-6">
            <h2 id="overview-title" className="text-xl font-semibold">Overview</h2>
            <Markdown text={doc.info.description} headingLevel="h3" />
          </section>

          {[...byTag.entries()].map(([tag, ops]) => {
            const info = (doc.tags as Json[]).find((t) => t.name === tag);
            return (
              <section key={tag} id={`tag-${slug(tag)}`} aria-labelledby={`tag-${slug(tag)}-title`} className="mt-10 scroll-mt-4">
                <h2 id={`tag-${slug(tag)}-title`} className="text-xl font-semibold">{tag}</h2>
                {info?.description && <p className="mt-1 text-slate-700">{info.description}</p>}
                {ops.map((item) => (
                  <Operation key={item.op.operationId} doc={doc} item={item} />
                ))}
              </section>
            );
          })}

          <section id="webhook-payloads" aria-labelledby="webhook-payloads-title" className="mt-10 scroll-mt-4">
            <h2 id="webhook-payloads-title" className="text-xl font-semibold">Webhook payloads</h2>
            <p className="mt-1 text-slate-700">What the service POSTs to your webhook urls, per registration style.</p>
            {Object.entries(doc.webhooks as Record<string, Json>).map(([name, item]) => (
              <Webhook key={name} doc={doc} name={name} item={item} />
            ))}
          </section>

          <section id="errors" aria-labelledby="errors-title" className="mt-10 scroll-mt-4">
            <h2 id="errors-title" className="text-xl font-semibold">Errors</h2>
            <p className="mt-1 text-slate-700">
              Every error has the body <code className="font-mono">{'{"error": {"type", "message", "param", "request_id"}}'}</code> and a{' '}
              <code className="font-mono">Request-Id</code> header.
            </p>
            <FieldTable rows={fieldRows(doc, { $ref: '#/components/schemas/Error' }, 2)} caption="Error body fields" />
            {(Object.entries(STATUS) as [ErrorType, number][]).map(([type, status]) => (
              <div key={type} id={`error-${type}`} className="mt-4 scroll-mt-4 rounded border border-slate-200 bg-white p-4">
                <h3 className="font-semibold">
                  <span className="font-mono">{status}</span> <span className="font-mono">{type}</span>
                </h3>
                <p className="mt-1 text-slate-800">{examples[type]?.summary}</p>
                <Example label={`Example ${type} body`} value={examples[type]?.value} />
              </div>
            ))}
          </section>
        </main>
      </div>
    </div>
  );
}
