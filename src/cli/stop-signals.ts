/**
 * Ctrl-C and SIGTERM for the commands that run until stopped (`dev`, `worker`, `inbox`), from the
 * first moment of their start-up to the end of their stop.
 *
 * - During start-up a signal interrupts it: what has started is stopped, and the process exits 130.
 * - Once running, the first signal stops everything gracefully and exits 0.
 * - A second signal forces the exit (130), unless it arrives within {@link duplicateWindowMilliseconds}
 *   of the first: a terminal sends Ctrl-C to every process of the foreground group, and wrappers
 *   such as npm relay it to their child again, so one key press can arrive twice.
 */

/** The process-wide parts a run needs; tests pass their own. */
export interface StopSignalHost {
  on(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): void;
  off(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): void;
  write(text: string): void;
  exit(code: number): void;
  now(): number;
}

export const duplicateWindowMilliseconds = 1000;
const stopSignals: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];

const processHost: StopSignalHost = {
  on: (signal, listener) => process.on(signal, listener),
  off: (signal, listener) => process.off(signal, listener),
  write: (text) => process.stderr.write(text),
  exit: (code) => process.exit(code),
  now: () => Date.now(),
};

export interface UntilStoppedOptions<T> {
  /** Starts the parts; must stop what it started, and reject, when `signal` aborts. */
  start(signal: AbortSignal): Promise<T>;
  /** Runs once started (prints the summary, writes the endpoint file). */
  started?(parts: T): Promise<void> | void;
  /** Settles when the parts stop on their own (a worker that fails, for instance). */
  running(parts: T): Promise<void>;
  stop(parts: T): Promise<void>;
  /** Names what stops, for the messages: "the worker and the server". */
  what: string;
}

/**
 * Starts, runs until a stop signal or until the parts stop on their own, and stops. Exits the
 * process itself after a signal (0 after a graceful stop, 130 after an interrupted start-up or a
 * forced exit); otherwise resolves, or rejects with the start's or the run's error.
 */
export async function runUntilStopped<T>(
  options: UntilStoppedOptions<T>,
  host: StopSignalHost = processHost,
): Promise<void> {
  const interrupt = new AbortController();
  let parts: T | undefined;
  let firstSignalAt: number | undefined;
  let stopping: Promise<void> | undefined;

  const stopAndExit = (started: T, exitCode: number): void => {
    stopping ??= options.stop(started).then(
      () => {
        host.write('Stopped.\n');
        host.exit(exitCode);
      },
      (error: unknown) => {
        host.write(`The stop failed: ${error instanceof Error ? error.message : String(error)}\n`);
        host.exit(1);
      },
    );
  };

  const onSignal = (signal: NodeJS.Signals): void => {
    const now = host.now();
    if (firstSignalAt !== undefined) {
      if (now - firstSignalAt < duplicateWindowMilliseconds) return;
      host.write(`Second ${signal}: exiting now, without waiting for the stop to finish.\n`);
      host.exit(130);
      return;
    }
    firstSignalAt = now;
    interrupt.abort(new Error(`${signal} received`));
    const again = `${signal === 'SIGINT' ? 'Ctrl-C' : signal} again exits at once`;
    if (parts === undefined) {
      host.write(`\n${signal} received during start-up: stopping what has started… (${again})\n`);
      return;
    }
    host.write(`\n${signal} received: stopping ${options.what}… (${again})\n`);
    stopAndExit(parts, 0);
  };
  for (const signal of stopSignals) host.on(signal, onSignal);

  try {
    try {
      parts = await options.start(interrupt.signal);
    } catch (error) {
      if (!interrupt.signal.aborted) throw error;
      host.write('Start-up interrupted; nothing it started is left running.\n');
      host.exit(130);
      return;
    }
    if (interrupt.signal.aborted) {
      // The signal came as the start finished: stop what it returned.
      stopAndExit(parts, 130);
      await stopping;
      return;
    }
    try {
      await options.started?.(parts);
      await options.running(parts);
    } finally {
      if (stopping) {
        await stopping;
      } else {
        await options.stop(parts);
      }
    }
  } finally {
    if (!stopping) for (const signal of stopSignals) host.off(signal, onSignal);
  }
}
