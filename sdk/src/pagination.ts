import { BillingError } from './errors.js';

/** One page of a list, as the API answers it. */
export type Page<T> = { data: T[]; has_more: boolean };

/**
 * A list call. `await` it for the first page (`{ data, has_more }`); iterate it with `for await`
 * for every item of every page, newest first: while `has_more` is true, the next page is asked
 * for with the last item's id as `starting_after`. Pages are fetched as the loop gets to them.
 */
export class ListPromise<T> implements PromiseLike<Page<T>>, AsyncIterable<T> {
  #first: Promise<Page<T>> | undefined;

  constructor(
    private readonly fetchPage: (startingAfter: string | undefined) => Promise<Page<T>>,
    private readonly startingAfter?: string,
  ) {}

  #firstPage(): Promise<Page<T>> {
    // A first page that failed is asked for again the next time, not kept.
    this.#first ??= this.fetchPage(this.startingAfter).catch((err: unknown) => {
      this.#first = undefined;
      throw err;
    });
    return this.#first;
  }

  then<A = Page<T>, B = never>(onFulfilled?: ((page: Page<T>) => A | PromiseLike<A>) | null, onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<A | B> {
    return this.#firstPage().then(onFulfilled, onRejected);
  }

  /** Every page, the first one included. */
  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let page = await this.#firstPage();
    while (true) {
      yield page;
      if (!page.has_more) return;
      // An item's id; a webhook subscription, which has none, is keyed by its topic.
      const last = page.data[page.data.length - 1] as { id?: unknown; topic?: unknown } | undefined;
      const key = typeof last?.id === 'string' ? last.id : typeof last?.topic === 'string' ? last.topic : undefined;
      if (key === undefined) throw new BillingError('A page said has_more but its last item has no id to continue after.');
      page = await this.fetchPage(key);
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.data;
  }

  /** Every item of every page, in one array (mind the size of what you ask for). */
  async toArray(): Promise<T[]> {
    const all: T[] = [];
    for await (const item of this) all.push(item);
    return all;
  }
}
