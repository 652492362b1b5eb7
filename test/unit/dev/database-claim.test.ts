import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  claimDatabase,
  claimFileOf,
  DatabaseInUseError,
  type ListedProcess,
  listSystemProcesses,
} from '../../../src/dev/database-claim.ts';

/** A pid that belonged to a process which has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

/** A live stand-in for a server: the listing given to the claim says what its command line is. */
function standIn(): ChildProcess {
  return spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
}

function serverListing(pid: number, parentPid: number, dbFile: string): ListedProcess {
  const args = ['temporal', 'server', 'start-dev', '--db-filename', dbFile, '--port', '7233'];
  return { pid, parentPid, command: args.join(' '), args };
}

const quiet = { onProgress: () => undefined };

describe('claimDatabase', () => {
  let dir: string;
  let dbFile: string;
  const children: ChildProcess[] = [];
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolgate-claim-'));
    dbFile = join(dir, 'temporal.db');
  });
  afterEach(async () => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('claims a free file, records the server, and releases it', async () => {
    const claim = await claimDatabase(dbFile, { ...quiet, listProcesses: async () => [] });
    expect(JSON.parse(await readFile(claimFileOf(dbFile), 'utf8'))).toMatchObject({ ownerPid: process.pid });
    await claim.recordServer(4242, '127.0.0.1:7233');
    expect(JSON.parse(await readFile(claimFileOf(dbFile), 'utf8'))).toMatchObject({
      ownerPid: process.pid,
      serverPid: 4242,
      address: '127.0.0.1:7233',
    });
    await claim.release();
    expect(existsSync(claimFileOf(dbFile))).toBe(false);
    await claim.release();
  });

  it('refuses a file that a live process has claimed, naming it, and leaves its claim alone', async () => {
    const owner = standIn();
    children.push(owner);
    const record = { ownerPid: owner.pid, claimedAt: new Date().toISOString() };
    await writeFile(claimFileOf(dbFile), JSON.stringify(record));
    const attempt = claimDatabase(dbFile, { ...quiet, listProcesses: async () => [] });
    await expect(attempt).rejects.toThrow(DatabaseInUseError);
    await expect(attempt).rejects.toThrow(`a running process (pid ${owner.pid})`);
    expect(JSON.parse(await readFile(claimFileOf(dbFile), 'utf8'))).toEqual(record);
  });

  it('refuses a file that a server toolgate did not start has open, and says how to stop it', async () => {
    const server = standIn();
    children.push(server);
    const attempt = claimDatabase(dbFile, {
      ...quiet,
      listProcesses: async () => [serverListing(server.pid!, 1, dbFile)],
    });
    await expect(attempt).rejects.toThrow(`already open in a Temporal server (pid ${server.pid})`);
    await expect(attempt).rejects.toThrow(`kill ${server.pid}`);
    expect(server.exitCode).toBeNull();
  });

  it('finds a server started by hand with a relative path, in each form of the flag', async () => {
    // A real process with a server's command line, run from the database's folder: the listing is
    // the system's own (/proc), working directory included.
    for (const flag of [
      ['--db-filename', 'temporal.db'],
      ['--db-filename=temporal.db'],
      ['-f', './temporal.db'],
    ]) {
      const byHand = spawn(
        process.execPath,
        ['-e', 'setInterval(() => {}, 1000)', 'temporal', 'server', 'start-dev', ...flag],
        { cwd: dir, stdio: 'ignore' },
      );
      children.push(byHand);
      const attempt = claimDatabase(dbFile, quiet);
      await expect(attempt, flag.join(' ')).rejects.toThrow(
        `already open in a Temporal server (pid ${byHand.pid})`,
      );
      byHand.kill('SIGKILL');
      await new Promise((resolve) => byHand.once('exit', resolve));
    }
    // The same relative name run from another folder is another file.
    const elsewhere = spawn(
      process.execPath,
      [
        '-e',
        'setInterval(() => {}, 1000)',
        'temporal',
        'server',
        'start-dev',
        '--db-filename',
        'temporal.db',
      ],
      { cwd: tmpdir(), stdio: 'ignore' },
    );
    children.push(elsewhere);
    await (await claimDatabase(dbFile, quiet)).release();
  });

  it('refuses while the owner runs its recorded server, and points at the owner', async () => {
    const owner = standIn();
    const server = standIn();
    children.push(owner, server);
    await writeFile(
      claimFileOf(dbFile),
      JSON.stringify({ ownerPid: owner.pid, serverPid: server.pid, claimedAt: new Date().toISOString() }),
    );
    const attempt = claimDatabase(dbFile, {
      ...quiet,
      listProcesses: async () => [serverListing(server.pid!, owner.pid!, dbFile)],
    });
    await expect(attempt).rejects.toThrow(`stop the toolgate that runs it (pid ${owner.pid}`);
    expect(server.exitCode).toBeNull();
  });

  it('stops the server a dead owner left behind, then claims the file', async () => {
    const orphan = standIn();
    children.push(orphan);
    const gonePid = await deadPid();
    await writeFile(
      claimFileOf(dbFile),
      JSON.stringify({ ownerPid: gonePid, serverPid: orphan.pid, claimedAt: new Date().toISOString() }),
    );
    const exited = new Promise((resolve) => orphan.once('exit', (_code, signal) => resolve(signal)));
    const lines: string[] = [];
    await claimDatabase(dbFile, {
      onProgress: (line) => lines.push(line),
      listProcesses: async () => (orphan.exitCode === null ? [serverListing(orphan.pid!, 1, dbFile)] : []),
    });
    expect(await exited).toBe('SIGTERM');
    expect(lines.join('\n')).toContain(`Stopped the Temporal dev server (pid ${orphan.pid})`);
    expect(lines.join('\n')).toContain(`(pid ${gonePid})`);
    expect(JSON.parse(await readFile(claimFileOf(dbFile), 'utf8'))).toMatchObject({ ownerPid: process.pid });
  });

  it('takes over a claim whose owner is gone, or that cannot be read', async () => {
    await writeFile(claimFileOf(dbFile), JSON.stringify({ ownerPid: await deadPid(), claimedAt: 'x' }));
    const first = await claimDatabase(dbFile, { ...quiet, listProcesses: async () => [] });
    await first.release();
    await writeFile(claimFileOf(dbFile), '{"ownerPid": 12');
    await claimDatabase(dbFile, { ...quiet, listProcesses: async () => [] });
    expect(JSON.parse(await readFile(claimFileOf(dbFile), 'utf8'))).toMatchObject({ ownerPid: process.pid });
  });

  it('lets only one of two overlapping starts through, on a free file or over a stale claim', async () => {
    for (const stale of [undefined, JSON.stringify({ ownerPid: await deadPid(), claimedAt: 'x' })]) {
      if (stale) await writeFile(claimFileOf(dbFile), stale);
      // The second start begins while the first is inside its claim (listing processes, before it
      // writes), and is slow to list in turn: without the lock it would read the claim file before
      // the first wrote it, and go on once the first has finished. It begins only once the first
      // is inside, so the first always takes the lock first (two starts begun together could take
      // it in either order, and the second, holding it, would wait for the first for ever).
      let firstDone!: () => void;
      const firstFinished = new Promise<void>((resolve) => {
        firstDone = resolve;
      });
      let firstInside!: () => void;
      const firstListing = new Promise<void>((resolve) => {
        firstInside = resolve;
      });
      const first = claimDatabase(dbFile, {
        ...quiet,
        listProcesses: async () => {
          firstInside();
          // Time for the second start to reach the claim file (or the lock) meanwhile.
          await new Promise((resolve) => setTimeout(resolve, 200));
          return [];
        },
      });
      void first.finally(firstDone);
      await firstListing;
      const second = claimDatabase(dbFile, {
        ...quiet,
        listProcesses: async () => {
          await firstFinished;
          return [];
        },
      });
      const claim = await first;
      await expect(second).rejects.toThrow(DatabaseInUseError);
      expect(JSON.parse(await readFile(claimFileOf(dbFile), 'utf8'))).toMatchObject({
        ownerPid: process.pid,
      });
      await claim.release();
      expect(existsSync(claimFileOf(dbFile))).toBe(false);
    }
  });

  it('ignores servers on other files', async () => {
    const server = standIn();
    children.push(server);
    await claimDatabase(dbFile, {
      ...quiet,
      listProcesses: async () => [serverListing(server.pid!, 1, `${dbFile}-other`)],
    });
    expect(server.exitCode).toBeNull();
  });
});

describe('listSystemProcesses', () => {
  it('lists this process with its parent and its exact arguments', async () => {
    const own = (await listSystemProcesses()).find((listed) => listed.pid === process.pid);
    expect(own).toBeDefined();
    expect(own!.parentPid).toBe(process.ppid);
    expect(own!.args?.[0]).toBeTruthy();
    expect(own!.command).toContain(own!.args![0]!);
  });
});
