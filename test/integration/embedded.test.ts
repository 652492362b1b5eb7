import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { CallContext } from '../../src/contracts/call-record.ts';
import { startEmbedded } from '../../src/embedded.ts';

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

  it('joins an existing cluster from TEMPORAL_ADDRESS and starts no server', async () => {
    const address = inject('temporalAddress');
    const lines: string[] = [];
    const joined = await startEmbedded({
      dataDir: join(dataDir, 'joined'),
      env: { ...process.env, TEMPORAL_ADDRESS: address },
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
});
