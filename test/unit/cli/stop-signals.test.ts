import { describe, expect, it } from 'vitest';
import {
  duplicateWindowMilliseconds,
  runUntilStopped,
  type StopSignalHost,
  type UntilStoppedOptions,
} from '../../../src/cli/stop-signals.ts';

type Listener = (signal: NodeJS.Signals) => void;

/** A host whose signals, clock and exit the test drives; `exit` records instead of exiting. */
function createHost() {
  const listeners = new Map<NodeJS.Signals, Set<Listener>>();
  const state = { now: 1_000_000, output: '', exits: [] as number[] };
  const host: StopSignalHost = {
    on: (signal, listener) => {
      if (!listeners.has(signal)) listeners.set(signal, new Set());
      listeners.get(signal)!.add(listener);
    },
    off: (signal, listener) => listeners.get(signal)?.delete(listener),
    write: (text) => {
      state.output += text;
    },
    exit: (code) => {
      state.exits.push(code);
    },
    now: () => state.now,
  };
  const send = (signal: NodeJS.Signals): void => {
    for (const listener of [...(listeners.get(signal) ?? [])]) listener(signal);
  };
  const listening = (): number => [...listeners.values()].reduce((sum, set) => sum + set.size, 0);
  return { host, state, send, listening };
}

/** Parts whose start, run and stop the test settles by hand. */
function createParts() {
  const calls = { stops: 0, starts: 0 };
  let finishStart!: (value: string) => void;
  let failStart!: (error: Error) => void;
  let endRun!: (error?: Error) => void;
  let startSignal: AbortSignal | undefined;
  const run = new Promise<void>((resolve, reject) => {
    endRun = (error) => (error ? reject(error) : resolve());
  });
  const options: UntilStoppedOptions<string> = {
    what: 'the parts',
    start: (signal) => {
      calls.starts++;
      startSignal = signal;
      return new Promise<string>((resolve, reject) => {
        finishStart = resolve;
        failStart = reject;
      });
    },
    running: () => run,
    stop: async () => {
      calls.stops++;
      endRun();
    },
  };
  return {
    options,
    calls,
    finishStart: (value = 'parts') => finishStart(value),
    failStart: (error: Error) => failStart(error),
    endRun: (error?: Error) => endRun(error),
    startSignal: () => startSignal,
  };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

type Parts = ReturnType<typeof createParts>;

/** A run on a fresh host with fresh parts; `configure` edits the parts before the run begins. */
function beginRun(configure?: (parts: Parts) => void) {
  const harness = createHost();
  const parts = createParts();
  configure?.(parts);
  return { ...harness, parts, run: runUntilStopped(parts.options, harness.host) };
}

describe('runUntilStopped', () => {
  it('stops gracefully on the first signal and exits 0', async () => {
    const { state, send, parts, run } = beginRun();
    parts.finishStart();
    await settle();
    send('SIGINT');
    await run;
    expect(parts.calls.stops).toBe(1);
    expect(state.exits).toEqual([0]);
    expect(state.output).toContain('SIGINT received: stopping the parts');
    expect(state.output).toContain('Stopped.');
  });

  it('treats a repeat within the window as the same key press, and a later one as a forced exit', async () => {
    // A stop that hangs, as one waiting on a tool that ignores its cancellation would.
    const { state, send, parts, run } = beginRun((parts) => {
      parts.options.stop = () => {
        parts.calls.stops++;
        return new Promise<void>(() => undefined);
      };
    });
    parts.finishStart();
    await settle();
    send('SIGINT');
    state.now += duplicateWindowMilliseconds - 1;
    send('SIGINT');
    send('SIGTERM');
    await settle();
    expect(state.exits).toEqual([]);
    expect(state.output).not.toContain('Second');
    state.now += 2;
    send('SIGINT');
    expect(state.exits).toEqual([130]);
    expect(state.output).toContain('Second SIGINT: exiting now');
    expect(parts.calls.stops).toBe(1);
    // The hung stop keeps `run` pending for good, as the real process would have exited by now.
    void run;
  });

  it('interrupts the start: the start sees the abort, and the process exits 130 once it has undone itself', async () => {
    const { state, send, parts, run } = beginRun();
    await settle();
    send('SIGTERM');
    expect(parts.startSignal()?.aborted).toBe(true);
    expect(state.output).toContain('SIGTERM received during start-up');
    expect(state.exits).toEqual([]);
    parts.failStart(new Error('aborted'));
    await run;
    expect(state.exits).toEqual([130]);
    expect(state.output).toContain('Start-up interrupted; nothing it started is left running.');
    expect(parts.calls.stops).toBe(0);
  });

  it('stops what a start returned when the signal came as it finished, and exits 130', async () => {
    const { state, send, parts, run } = beginRun();
    await settle();
    send('SIGINT');
    parts.finishStart();
    await run;
    expect(parts.calls.stops).toBe(1);
    expect(state.exits).toEqual([130]);
  });

  it('passes a failed start on as it is, with no exit and no listener left behind', async () => {
    const { state, listening, parts, run } = beginRun();
    await settle();
    expect(listening()).toBe(2);
    parts.failStart(new Error('port taken'));
    await expect(run).rejects.toThrow('port taken');
    expect(state.exits).toEqual([]);
    expect(listening()).toBe(0);
  });

  it('stops the parts when they fail on their own, and passes the failure on', async () => {
    const { state, listening, parts, run } = beginRun();
    parts.finishStart();
    await settle();
    parts.endRun(new Error('worker crashed'));
    await expect(run).rejects.toThrow('worker crashed');
    expect(parts.calls.stops).toBe(1);
    expect(state.exits).toEqual([]);
    expect(listening()).toBe(0);
  });

  it('stops the parts when announcing them fails', async () => {
    const { parts, run } = beginRun((parts) => {
      parts.options.started = () => {
        throw new Error('disk full');
      };
    });
    parts.finishStart();
    await expect(run).rejects.toThrow('disk full');
    expect(parts.calls.stops).toBe(1);
  });
});
