import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { WorkerProcessConfig } from './worker-process.ts';

const workerScript = fileURLToPath(new URL('./worker-process.ts', import.meta.url));

/** A child process the test owns: started by the test, stopped by its PID. */
export interface ChildHandle {
  readonly process: ChildProcess;
  readonly pid: number;
  /** Sends SIGKILL, as a crash would, and waits for the exit. */
  kill(): Promise<void>;
  /** SIGTERM, then SIGKILL after 5 s; waits for the exit. */
  stop(): Promise<void>;
}

/**
 * `group`: the child leads its own process group and signals go to the whole group, as a terminal
 * sends Ctrl-C to a foreground command and everything it started (npx and the program it runs).
 * Then stop() and kill() return once no process of the group is left.
 */
function handleFor(child: ChildProcess, group = false): ChildHandle {
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const alive = () => child.exitCode === null && child.signalCode === null;
  const groupAlive = () => {
    try {
      process.kill(-child.pid!, 0);
      return true;
    } catch {
      return false;
    }
  };
  const signal = (name: NodeJS.Signals) => {
    if (!group) {
      if (alive()) child.kill(name);
      return;
    }
    try {
      process.kill(-child.pid!, name);
    } catch {
      // The group is gone already.
    }
  };
  const gone = async () => {
    await exited;
    while (group && groupAlive()) await new Promise((resolve) => setTimeout(resolve, 50));
  };
  return {
    process: child,
    pid: child.pid!,
    async kill() {
      signal('SIGKILL');
      await gone();
    },
    async stop() {
      signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), 15_000);
      await gone();
      clearTimeout(timer);
    },
  };
}

/** A started child: its stdout lines so far, and everything it wrote to stderr. */
export type SpawnedChild = ChildHandle & { lines: string[]; stderr(): string };

/** Spawns a TypeScript script with tsx and resolves once it prints `marker` on a line. */
export function spawnScript(
  script: string,
  args: readonly string[],
  marker: string,
  timeoutMs = 60_000,
): Promise<SpawnedChild> {
  return spawnNode(['--import', 'tsx', script, ...args], marker, { timeoutMs });
}

/** Spawns `node` with these arguments and resolves once the process prints `marker` on a line. */
export function spawnNode(
  args: readonly string[],
  marker: string,
  options: SpawnOptions = {},
): Promise<SpawnedChild> {
  return spawnCommand(process.execPath, args, marker, options);
}

export interface SpawnOptions {
  readonly timeoutMs?: number;
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Its own process group, signalled as a whole (see `handleFor`). */
  readonly group?: boolean;
}

/** Spawns a command and resolves once the process prints `marker` on a line. */
export async function spawnCommand(
  command: string,
  args: readonly string[],
  marker: string,
  options: SpawnOptions = {},
): Promise<SpawnedChild> {
  const what = args.find((arg) => !arg.startsWith('-') && arg !== 'tsx') ?? command;
  const child = spawn(command, [...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.env ? { env: options.env } : {}),
    ...(options.group ? { detached: true } : {}),
  });
  const handle = handleFor(child, options.group);
  const lines: string[] = [];
  let stderr = '';
  let allStderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
    allStderr += chunk.toString();
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${what} did not print ${marker}: ${stderr}`)),
      options.timeoutMs ?? 60_000,
    );
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const parts = buffered.split('\n');
      buffered = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        if (line.startsWith(marker)) {
          clearTimeout(timer);
          resolve();
        }
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code ?? signal}) before ${marker}: ${stderr}`));
    });
  });
  return { ...handle, lines, stderr: () => allStderr };
}

/** Starts a worker process (see worker-process.ts) and waits until it polls. */
export function spawnWorker(config: WorkerProcessConfig): Promise<SpawnedChild> {
  return spawnScript(workerScript, [JSON.stringify(config)], 'READY');
}

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export function isProcessRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
