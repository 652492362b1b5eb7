import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A plain HTTP server on 127.0.0.1 that counts connections and requests, for SSRF and breaker tests. */
export interface LoopbackServer {
  readonly port: number;
  readonly url: string;
  readonly stats: { connections: number; requests: number };
  close(): Promise<void>;
}

export async function startLoopbackServer(
  handler: (request: IncomingMessage, response: ServerResponse) => void,
): Promise<LoopbackServer> {
  const stats = { connections: 0, requests: 0 };
  const server = createServer((request, response) => {
    stats.requests++;
    handler(request, response);
  });
  server.on('connection', () => {
    stats.connections++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    stats,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
