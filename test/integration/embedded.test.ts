import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { exampleToolSet } from '../../examples/tool-set.ts';
import type { CallContext } from '../../src/contracts/call-record.ts';
import { startEmbedded } from '../../src/dev/embedded.ts';
import { isProcessRunning, spawnScript } from '../support/child-processes.ts';

const agent: CallContext = { tenant: 'embedded', principal: 'agent-1', principalKind: 'agent' };

describe('the embedded default (what npm start runs)', () => {
  let dataDir: string;
  let blocker: Server;
  let busyPort: number;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'toolgate-embedded-'));
    blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    busyPort = (blocker.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => blocker.close(resolve));
    await rm(dataDir, { recursive: true, force: true });
  });

  it('moves to a free port when the preferred one is busy, and keeps state across a restart', async () => {
    const env = { ...process.env, TEMPORAL_ADDRESS: '', TEMPORAL_PROFILE: '', TEMPORAL_CONFIG_FILE: '' };
    const first = await startEmbedded({
      tools: exampleToolSet,
      dataDir,
      env,
      grpcPort: busyPort,
      uiPort: 0,
      headless: true,
      onProgress: () => {},
    });
    let callId: string;
    try {
      expect(first.server).toBeDefined();
      expect(first.address).not.toBe(`127.0.0.1:${busyPort}`);
      expect(first.dbFile).toBe(join(dataDir, 'temporal.db'));
      const record = await first.client.call(
        { tool: 'write_report', input: { path: 'persist.md', content: 'kept' }, key: 'persist-1' },
        agent,
      );
      expect(record.status).toBe('succeeded');
      callId = record.callId;
    } finally {
      await first.stop();
    }
    const serverPid = first.server!.pid;
    expect(() => process.kill(serverPid, 0)).toThrow();

    const second = await startEmbedded({
      tools: exampleToolSet,
      dataDir,
      env,
      grpcPort: 0,
      uiPort: 0,
      headless: true,
      onProgress: () => {},
    });
    try {
      const stored = await second.client.get(callId);
      expect(stored).toMatchObject({ status: 'succeeded', effect: 'applied', key: 'persist-1' });
      const again = await second.client.start(
        { tool: 'write_report', input: { path: 'persist.md', content: 'kept' }, key: 'persist-1' },
        agent,
      );
      expect(again.disposition).toBe('existing');
    } finally {
      await second.stop();
    }
  });

  it('joins the cluster it is given and starts no server', async () => {
    const address = inject('temporalAddress');
    const lines: string[] = [];
    const joined = await startEmbedded({
      tools: exampleToolSet,
      dataDir: join(dataDir, 'joined'),
      cluster: { address, namespace: 'default' },
      taskQueue: `embedded-join-${Date.now()}`,
      onProgress: (line) => lines.push(line),
    });
    try {
      expect(joined.server).toBeUndefined();
      expect(joined.address).toBe(address);
      expect(lines.join('\n')).toContain('existing Temporal cluster');
      const record = await joined.client.call({ tool: 'read_config', input: { name: 'region' } }, agent);
      expect(record.status).toBe('succeeded');
    } finally {
      await joined.stop();
    }
  });

  it('an interrupted start leaves nothing running, even a worker still being created', async () => {
    // A library caller's start, interrupted while the worker bundles its workflow code: the start
    // rejects, its server is stopped, and the worker that arrives afterwards must not keep the
    // process alive (its workflow threads did, before).
    const script = fileURLToPath(new URL('../support/interrupted-embedded.ts', import.meta.url));
    const child = await spawnScript(script, [join(dataDir, 'interrupted')], 'INTERRUPTED');
    try {
      expect(child.lines).toContain('INTERRUPTED interrupted while the worker was being created');
      const exited = await Promise.race([
        new Promise<'exited'>((resolve) => {
          if (child.process.exitCode !== null) resolve('exited');
          else child.process.once('exit', () => resolve('exited'));
        }),
        new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 30_000)),
      ]);
      expect(exited).toBe('exited');
      expect(child.process.exitCode).toBe(0);
      const ready = child.lines.join('\n').match(/Temporal dev server ready at \S+ \(pid (\d+)\)/);
      expect(ready, child.lines.join('\n')).not.toBeNull();
      expect(isProcessRunning(Number(ready![1]))).toBe(false);
    } finally {
      await child.kill();
    }
  });
});
