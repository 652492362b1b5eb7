/**
 * Waits for a step that cannot itself be interrupted, or rejects at once with the signal's reason
 * when `signal` aborts first. The step goes on unobserved: a result that arrives after the abort is
 * handed to `dispose` (to close a connection that is no longer wanted), and a late error is dropped.
 */
export function untilAborted<T>(
  step: Promise<T>,
  signal: AbortSignal | undefined,
  dispose?: (late: T) => unknown,
): Promise<T> {
  if (!signal) return step;
  return new Promise<T>((resolveStep, rejectStep) => {
    const onAbort = (): void => {
      rejectStep(signal.reason);
      void step.then((late) => dispose?.(late)).catch(() => undefined);
    };
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    step.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolveStep(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        rejectStep(error);
      },
    );
  });
}
