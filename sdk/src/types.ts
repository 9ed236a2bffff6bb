// Types that read the generated `paths` (schema.ts): what each path and method takes and answers.
import type { paths } from './schema.js';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

type AnyOperation = { parameters: unknown; responses: unknown };

/** The document's paths that answer method M. */
export type PathsFor<M extends HttpMethod> = {
  [P in keyof paths]: paths[P] extends { [K in M]: AnyOperation } ? P : never;
}[keyof paths];

/** The operation at path P and method M. */
export type OperationAt<P extends keyof paths, M extends HttpMethod> = paths[P] extends { [K in M]: infer O } ? O : never;

type PathParamsOf<O> = O extends { parameters: { path: infer X } } ? X : never;
type QueryOf<O> = O extends { parameters: { query?: infer Q } } ? Exclude<Q, undefined> : never;
type RequestBodyOf<O> = O extends { requestBody?: infer R } ? R : never;
type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : never;
type BodyRequired<O> = O extends { requestBody: { content: unknown } } ? true : false;

/** company_id is filled in from the client's companyId when left out. */
type WithCompany<X> = 'company_id' extends keyof X ? Omit<X, 'company_id'> & { company_id?: string } : X;

/** What one call sends besides the path: each retry sends the same. */
export type CallOptions = {
  /** Makes a retry safe (24 hours). Generated for POST, PUT, PATCH and DELETE when left out (an Idempotency-Key header in `headers` counts). */
  idempotencyKey?: string;
  /** Per attempt; default the client's timeoutMs. */
  timeoutMs?: number;
  /** Retries after the first attempt; default the client's maxRetries. */
  maxRetries?: number;
  /** Aborts the call (and its retries) at once. */
  signal?: AbortSignal;
  /** Extra request headers. */
  headers?: Record<string, string>;
};

/** Stands for "no required keys": an object type with none is a supertype of it. */
type Empty = Record<string, never>;

type PathPart<O> = [PathParamsOf<O>] extends [never]
  ? { path?: undefined }
  : Empty extends WithCompany<PathParamsOf<O>>
    ? { path?: WithCompany<PathParamsOf<O>> }
    : { path: WithCompany<PathParamsOf<O>> };
type QueryPart<O> = [QueryOf<O>] extends [never] ? { query?: undefined } : Empty extends QueryOf<O> ? { query?: QueryOf<O> } : { query: QueryOf<O> };
type BodyPart<O> = [JsonOf<RequestBodyOf<O>>] extends [never]
  ? { body?: undefined }
  : BodyRequired<O> extends true
    ? { body: JsonOf<RequestBodyOf<O>> }
    : { body?: JsonOf<RequestBodyOf<O>> };

/** Options of a low-level request at path P and method M: path parameters, query, body. */
export type RequestOptions<P extends keyof paths, M extends HttpMethod> = PathPart<OperationAt<P, M>> &
  QueryPart<OperationAt<P, M>> &
  BodyPart<OperationAt<P, M>> &
  CallOptions;

type RequiredKeys<T> = { [K in keyof T]-?: Empty extends Pick<T, K> ? never : K }[keyof T];
/** The options argument, optional when nothing in it is required. */
export type OptionsArg<T> = [RequiredKeys<T>] extends [never] ? [options?: T] : [options: T];

/** The JSON body of the 200 answer at path P and method M. */
export type ResponseBody<P extends keyof paths, M extends HttpMethod> =
  OperationAt<P, M> extends { responses: { 200: { content: { 'application/json': infer R } } } } ? R : unknown;

/** GET paths that answer a list: `data` and `has_more`. */
export type ListPath = {
  [P in PathsFor<'get'>]: ResponseBody<P, 'get'> extends { data: unknown[]; has_more: boolean } ? P : never;
}[PathsFor<'get'>];

/** An item of the list at path P. */
export type ListItem<P extends ListPath> = ResponseBody<P, 'get'> extends { data: (infer T)[] } ? T : never;

/** The query parameters of GET path P. */
export type QueryParams<P extends PathsFor<'get'>> = NonNullable<RequestOptions<P, 'get'>['query']>;
