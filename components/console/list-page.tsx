import { Empty, Pager } from './ui';

/**
 * A console list: its rows newest first, or what to say when there are none, then the keyset
 * pager ("Older" continues after the last row shown, `after` in the page's address).
 */
export function ListPage<T extends { id: string }>({
  page,
  after,
  basePath,
  params = {},
  pagerLabel,
  empty,
  instead,
  children,
}: {
  page: { items: T[]; hasMore: boolean };
  /** The `after` the page was asked for: none on the newest page. */
  after: string | undefined;
  basePath: string;
  /** Filters the pager keeps on every page. */
  params?: Record<string, string | undefined>;
  pagerLabel: string;
  empty: React.ReactNode;
  /** Shown in place of the rows when there is nothing to list for another reason (a refused filter). */
  instead?: React.ReactNode;
  /** The table of the rows. */
  children: (items: T[]) => React.ReactNode;
}) {
  const last = page.items[page.items.length - 1];
  return (
    <>
      {instead ?? (page.items.length === 0 ? <Empty>{empty}</Empty> : children(page.items))}
      <Pager basePath={basePath} params={params} nextAfter={page.hasMore && last ? last.id : null} isFirst={!after} label={pagerLabel} />
    </>
  );
}
