/** Times named steps of a test's set-up, for the figures it prints: step → milliseconds. */
export function stepTimer(): {
  readonly timings: Record<string, number>;
  timed<T>(step: string, action: () => Promise<T>): Promise<T>;
} {
  const timings: Record<string, number> = {};
  return {
    timings,
    async timed(step, action) {
      const started = performance.now();
      try {
        return await action();
      } finally {
        timings[step] = Math.round(performance.now() - started);
      }
    },
  };
}
