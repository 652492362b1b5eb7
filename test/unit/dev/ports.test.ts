import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { findFreePort, isPortFree } from '../../../src/dev/ports.ts';

const openServers: Server[] = [];

afterEach(async () => {
  await Promise.all(openServers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function occupyPort(): Promise<number> {
  const server = createServer();
  openServers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address !== 'object') {
    throw new Error('the test server has no port');
  }
  return address.port;
}

async function portThatWasJustFree(): Promise<number> {
  const port = await occupyPort();
  await new Promise((resolve) => openServers.pop()!.close(resolve));
  return port;
}

describe('isPortFree', () => {
  it('says false for a port a server is listening on and true once it is released', async () => {
    const port = await occupyPort();
    expect(await isPortFree(port)).toBe(false);

    await new Promise((resolve) => openServers.pop()!.close(resolve));
    expect(await isPortFree(port)).toBe(true);
  });
});

describe('findFreePort', () => {
  it('returns a different, free port when the preferred one is taken', async () => {
    const taken = await occupyPort();

    const port = await findFreePort(taken);

    expect(port).not.toBe(taken);
    expect(port).toBeGreaterThan(0);
    expect(await isPortFree(port)).toBe(true);
  });

  it('returns the preferred port when it is free', async () => {
    const preferred = await portThatWasJustFree();

    expect(await findFreePort(preferred)).toBe(preferred);
  });

  it('lets the operating system choose when the preferred port is 0', async () => {
    const port = await findFreePort(0);

    expect(port).toBeGreaterThan(0);
    expect(await isPortFree(port)).toBe(true);
  });
});
