import { execFile } from 'node:child_process';
import { unlinkSync } from 'node:fs';
import { readdir, readFile, readlink, rename, unlink, writeFile } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { DatabaseInUseError } from '../contracts/errors.ts';
import { withFileLock } from '../support/file-lock.ts';

export { DatabaseInUseError };

/**
 * One Temporal dev server per SQLite file. The dev server is a one-node cluster that takes its
 * database to be its own, yet nothing in it stops a second server from opening the same file; two
 * would then act on the same calls. The claim is a small JSON file beside the database, `<db>.owner.json`, naming the process that
 * started the server and the server's own pid.
 *
 * When the owner is killed without a chance to stop its server (`kill -9`, the OOM killer), the
 * server goes on running alone. The next claim finds it by its command line, sees that the claim's
 * owner is gone, and stops it before a new one starts.
 */

/** A process as the system lists it. `args` is exact where the system gives it (Linux /proc). */
export interface ListedProcess {
  readonly pid: number;
  readonly parentPid: number;
  readonly command: string;
  readonly args?: readonly string[];
  /** The working directory, where the system gives it (Linux /proc, same user). */
  readonly cwd?: string;
}

interface ClaimRecord {
  readonly ownerPid: number;
  readonly serverPid?: number;
  readonly address?: string;
  readonly claimedAt: string;
}

export interface DatabaseClaim {
  /** Records the server the owner started, so that a later start can tell it is an orphan. */
  recordServer(serverPid: number, address: string): Promise<void>;
  /** Gives the file up; safe to call more than once. */
  release(): Promise<void>;
}

export interface ClaimOptions {
  readonly onProgress: (line: string) => void;
  /** Lists this machine's processes; the default reads /proc, or runs `ps` where there is none. */
  readonly listProcesses?: () => Promise<readonly ListedProcess[]>;
  /** How long an orphaned server gets to stop after SIGTERM before SIGKILL. Default 10000. */
  readonly orphanGraceMilliseconds?: number;
}

/** The claim file of a database. */
export function claimFileOf(dbFile: string): string {
  return `${dbFile}.owner.json`;
}

/**
 * Claims `dbFile` for a server this process is about to start. Throws DatabaseInUseError when a
 * live process holds it, and stops a server whose owner is gone.
 */
export async function claimDatabase(dbFile: string, options: ClaimOptions): Promise<DatabaseClaim> {
  const claimFile = claimFileOf(dbFile);
  // Reading the claim, judging it and replacing a stale one must not interleave with another
  // start doing the same: each would delete the claim the other had just written.
  return withClaimLock(claimFile, () => claimUnderLock(dbFile, claimFile, options));
}

async function claimUnderLock(
  dbFile: string,
  claimFile: string,
  options: ClaimOptions,
): Promise<DatabaseClaim> {
  const listProcesses = options.listProcesses ?? listSystemProcesses;
  for (let attempt = 1; ; attempt++) {
    const existing = await readClaim(claimFile);
    const servers = serversOn(dbFile, await listProcesses());
    const owner = liveOwner(existing, servers);
    await stopOrphans(dbFile, existing, owner, servers, options);
    if (owner !== undefined) {
      // The owner is starting its server, or runs one that the listing could not show.
      throw new DatabaseInUseError(
        `${dbFile} is claimed by ${owner === process.pid ? 'this process' : `a running process (pid ${owner})`}, ` +
          `which starts or runs a Temporal server on it. Stop that one first, or use another data directory. ` +
          `If that process is not a toolgate (its pid was reused), delete ${claimFile}.`,
      );
    }
    await unlink(claimFile).catch(() => undefined);
    const claim = await writeNewClaim(claimFile, attempt >= 3);
    if (claim !== undefined) return claim;
  }
}

/**
 * The pid of the process that holds the claim, if any. The owner holds the file while it lives
 * and, once it has recorded its server, while that server runs as its child. A recorded server
 * under another parent is an orphan, even if a new process has since been given the owner's pid.
 */
function liveOwner(existing: ClaimRecord | undefined, servers: readonly ListedProcess[]): number | undefined {
  if (existing === undefined || !isAlive(existing.ownerPid)) return undefined;
  if (existing.serverPid === undefined) return existing.ownerPid;
  const runsItsServer = servers.some(
    (server) => server.pid === existing.serverPid && server.parentPid === existing.ownerPid,
  );
  return runsItsServer ? existing.ownerPid : undefined;
}

/**
 * Stops the servers on `dbFile` that the claim recorded and whose owner is gone; any other server
 * on it is in use, and refused.
 */
async function stopOrphans(
  dbFile: string,
  existing: ClaimRecord | undefined,
  owner: number | undefined,
  servers: readonly ListedProcess[],
  options: ClaimOptions,
): Promise<void> {
  for (const server of servers) {
    const orphan = existing?.serverPid === server.pid && owner === undefined;
    if (!orphan) throw new DatabaseInUseError(serverInUseMessage(dbFile, server.pid, owner));
    await stopOrphan(server.pid, options.orphanGraceMilliseconds ?? 10_000);
    options.onProgress(
      `Stopped the Temporal dev server (pid ${server.pid}) that a toolgate no longer running ` +
        `(pid ${existing?.ownerPid}) had left on ${dbFile}.`,
    );
  }
}

/** Writes this process's claim; undefined when another start wrote one first, unless `lastAttempt`. */
async function writeNewClaim(claimFile: string, lastAttempt: boolean): Promise<DatabaseClaim | undefined> {
  const record: ClaimRecord = { ownerPid: process.pid, claimedAt: new Date().toISOString() };
  try {
    // 'wx' fails when another start created the file after it was read: then look again.
    await writeFile(claimFile, `${JSON.stringify(record)}\n`, { flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || lastAttempt) throw error;
    return undefined;
  }
  return ownedClaim(claimFile, record);
}

function ownedClaim(claimFile: string, record: ClaimRecord): DatabaseClaim {
  let released = false;
  // A process that exits without stopping its server has it killed by the dev server's own exit
  // hook; the claim goes with it.
  const releaseOnExit = (): void => {
    try {
      unlinkSync(claimFile);
    } catch {
      // Already gone.
    }
  };
  process.on('exit', releaseOnExit);
  return {
    async recordServer(serverPid, address) {
      if (released) return;
      const temporary = `${claimFile}.${process.pid}.tmp`;
      await writeFile(temporary, `${JSON.stringify({ ...record, serverPid, address })}\n`);
      await rename(temporary, claimFile);
    },
    async release() {
      if (released) return;
      released = true;
      process.off('exit', releaseOnExit);
      const current = await readClaim(claimFile);
      if (current?.ownerPid === record.ownerPid) await unlink(claimFile).catch(() => undefined);
    },
  };
}

/** The claim on file; undefined when there is none, or when it cannot be read (a damaged file). */
async function readClaim(claimFile: string): Promise<ClaimRecord | undefined> {
  try {
    const parsed = JSON.parse(await readFile(claimFile, 'utf8')) as Partial<ClaimRecord>;
    return Number.isSafeInteger(parsed.ownerPid) && (parsed.ownerPid as number) > 0
      ? (parsed as ClaimRecord)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A claim takes milliseconds, or up to 15 s when it stops an orphaned server; a lock older than a
 * minute was left by a process that died while claiming.
 */
const staleLockMilliseconds = 60_000;

/** Runs `work` holding `<claim>.lock`, created exclusively; waits for another holder to finish. */
function withClaimLock<T>(claimFile: string, work: () => Promise<T>): Promise<T> {
  return withFileLock(`${claimFile}.lock`, work, {
    staleMs: staleLockMilliseconds,
    timeoutError: (lockFile) =>
      new DatabaseInUseError(
        `Another start has held ${lockFile} for over a minute. If no toolgate is starting, delete it.`,
      ),
  });
}

/**
 * Temporal servers whose command line opens `dbFile` (an absolute path). A server started by hand
 * may name its file relative to its own working directory, and in any of the flag's forms
 * (`--db-filename F`, `--db-filename=F`, `-f F`, `-fF`, `-f=F`).
 */
function serversOn(dbFile: string, processes: readonly ListedProcess[]): ListedProcess[] {
  return processes.filter((listed) => {
    if (listed.pid === process.pid) return false;
    if (listed.args) {
      if (!listed.args.includes('start-dev')) return false;
      const named = databaseArgument(listed.args);
      if (named === undefined) return false;
      if (isAbsolute(named)) return resolve(named) === dbFile;
      return listed.cwd !== undefined && resolve(listed.cwd, named) === dbFile;
    }
    return (
      listed.command.includes(' start-dev ') &&
      [` --db-filename ${dbFile} `, ` --db-filename=${dbFile} `, ` -f ${dbFile} `].some((form) =>
        `${listed.command} `.includes(form),
      )
    );
  });
}

/** The value of the dev server's database flag, in whichever form it was given. */
function databaseArgument(args: readonly string[]): string | undefined {
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (arg === '--db-filename' || arg === '-f') return args[index + 1];
    if (arg.startsWith('--db-filename=')) return arg.slice('--db-filename='.length);
    if (arg.startsWith('-f=')) return arg.slice(3);
    if (arg.startsWith('-f') && !arg.startsWith('--')) return arg.slice(2);
  }
  return undefined;
}

function serverInUseMessage(dbFile: string, serverPid: number, owner: number | undefined): string {
  const stop =
    owner === undefined
      ? `stop it (kill ${serverPid})`
      : `stop the toolgate that runs it (pid ${owner}: Ctrl-C in its terminal, or kill ${owner})`;
  return (
    `${dbFile} is already open in a Temporal server (pid ${serverPid}), and two servers on one file ` +
    `would act on the same calls. Either ${stop}, or use another data directory (--data-dir).`
  );
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function stopOrphan(pid: number, graceMilliseconds: number): Promise<void> {
  const gone = async (withinMilliseconds: number): Promise<boolean> => {
    const deadline = Date.now() + withinMilliseconds;
    while (isAlive(pid)) {
      if (Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return true;
  };
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  if (await gone(graceMilliseconds)) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return;
  }
  if (!(await gone(5_000))) {
    throw new DatabaseInUseError(
      `The orphaned Temporal server (pid ${pid}) did not stop, even after SIGKILL.`,
    );
  }
}

/** This machine's processes: from /proc on Linux, from `ps` elsewhere. */
export async function listSystemProcesses(): Promise<ListedProcess[]> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return listWithPs();
  }
  const processes: ListedProcess[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const [cmdline, stat, cwd] = await Promise.all([
        readFile(`/proc/${entry}/cmdline`, 'utf8'),
        readFile(`/proc/${entry}/stat`, 'utf8'),
        // Another user's process hides its working directory.
        readlink(`/proc/${entry}/cwd`).catch(() => undefined),
      ]);
      const args = cmdline.split('\0').filter((arg, index, all) => arg !== '' || index < all.length - 1);
      // The name in parentheses may hold spaces and parentheses; the fields after it do not.
      const parentPid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      processes.push({
        pid: Number(entry),
        parentPid,
        command: args.join(' '),
        args,
        ...(cwd !== undefined ? { cwd } : {}),
      });
    } catch {
      // It ended while being read.
    }
  }
  return processes;
}

function listWithPs(): Promise<ListedProcess[]> {
  return new Promise((resolve, reject) => {
    execFile('ps', ['-A', '-o', 'pid=,ppid=,command='], { maxBuffer: 16 * 1024 * 1024 }, (error, stdout) => {
      if (error) {
        reject(
          new Error(`Could not list processes with ps to check who uses the database: ${error.message}`),
        );
        return;
      }
      const processes: ListedProcess[] = [];
      for (const line of stdout.split('\n')) {
        const match = /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line);
        if (match) processes.push({ pid: Number(match[1]), parentPid: Number(match[2]), command: match[3]! });
      }
      resolve(processes);
    });
  });
}
