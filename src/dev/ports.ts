import { createServer } from 'node:net';

/**
 * Tells whether a TCP port can be bound on `host` right now.
 *
 * Resolves false when the port is taken or reserved, and rejects on any other failure (for
 * example an address that does not exist on this machine), because guessing would hide a
 * misconfiguration.
 */
export function isPortFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE' || error.code === 'EACCES') {
        resolve(false);
      } else {
        reject(error);
      }
    });
    server.listen({ port, host, exclusive: true }, () => {
      server.close(() => resolve(true));
    });
  });
}

/**
 * Returns `preferred` when it is free on `host`, otherwise a port the operating system picks.
 * A preferred port of 0 means "any port".
 *
 * The port is only probed, not held, so another process could still take it before the caller
 * binds it; callers that spawn a server should treat a bind failure as retryable.
 */
export async function findFreePort(preferred: number, host = '127.0.0.1'): Promise<number> {
  if (preferred > 0 && (await isPortFree(preferred, host))) {
    return preferred;
  }
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ port: 0, host, exclusive: true }, () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') {
          resolve(address.port);
        } else {
          reject(new Error(`Could not read the port the operating system assigned on ${host}.`));
        }
      });
    });
  });
}
