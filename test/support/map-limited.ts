/**
 * Runs `work` over `items` with at most `limit` in flight and returns the results in the order of
 * `items`.
 *
 * On the first failure no further item starts. The items already in flight are awaited (for at
 * most `settleAfterFailureMs`, 30 s by default) before the failure is thrown, so nothing keeps
 * calling a server after the test has failed and its connections are closed; otherwise their late
 * errors bury the real one in the output.
 * The thrown error names the item that failed and how many others failed with it.
 */
export async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T, index: number) => Promise<R>,
  { settleAfterFailureMs = 30_000 }: { settleAfterFailureMs?: number } = {},
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  const failures: { index: number; error: unknown }[] = [];
  let next = 0;
  let inFlight = 0;
  let firstFailed: (() => void) | undefined;
  const failed = new Promise<void>((resolve) => {
    firstFailed = resolve;
  });
  const all = Promise.all(
    Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
      while (next < items.length && failures.length === 0) {
        const index = next++;
        inFlight++;
        try {
          results[index] = await work(items[index]!, index);
        } catch (error) {
          failures.push({ index, error });
          firstFailed?.();
        } finally {
          inFlight--;
        }
      }
    }),
  );
  // After a failure the items in flight get a bounded time to finish, so that one that never
  // returns cannot turn the failure into a test timeout that hides it.
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    all,
    failed.then(
      () =>
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, settleAfterFailureMs);
        }),
    ),
  ]);
  clearTimeout(timer);
  const first = failures[0];
  if (first) {
    const detail = first.error instanceof Error ? first.error.message : String(first.error);
    const others = [
      failures.length > 1 ? `${failures.length - 1} more in flight failed too` : '',
      inFlight > 0 ? `${inFlight} still in flight after ${settleAfterFailureMs} ms` : '',
    ].filter((part) => part.length > 0);
    throw new Error(
      `item ${first.index} of ${items.length} (${describeItem(items[first.index])}) failed` +
        `${others.length > 0 ? ` (${others.join('; ')})` : ''}: ${detail}`,
      { cause: first.error },
    );
  }
  return results;
}

function describeItem(item: unknown): string {
  const text = typeof item === 'string' ? item : JSON.stringify(item);
  return text === undefined ? String(item) : text.length > 120 ? `${text.slice(0, 120)}…` : text;
}
