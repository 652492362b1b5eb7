import { describe, expect, it } from 'vitest';
import type { CallSummary, ToolgateOperations } from '../../../src/client/operations.ts';
import type { CallRecord } from '../../../src/contracts/call-record.ts';
import { createApproverDirectory } from '../../../src/inbox/approver-tokens.ts';
import { createInboxApp, maximumClosedRecords } from '../../../src/inbox/inbox-app.ts';

const token = 'alice-token-0123456789';
const host = '127.0.0.1:8787';
const base = `http://${host}`;

/** The inbox over a stand-in for the operations API: these tests are about HTTP, not Temporal. */
function inboxWith(operations: Partial<ToolgateOperations> = {}) {
  return createInboxApp({
    operations: operations as ToolgateOperations,
    approvers: createApproverDirectory('approvers.json', {
      approvers: [{ name: 'alice', roles: ['finance'], token }],
    }),
  });
}

async function signIn(app: ReturnType<typeof inboxWith>): Promise<string> {
  const response = await app.request(`${base}/login`, {
    method: 'POST',
    headers: { host, origin: base, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token }).toString(),
  });
  expect(response.status).toBe(303);
  return (response.headers.get('set-cookie') ?? '').split(';')[0]!;
}

describe('inbox HTTP edges', () => {
  it('refuses a sign-in form over 8 KiB with 413, and an unreadable one with 400 rather than 500', async () => {
    const app = inboxWith();
    const huge = await app.request(`${base}/login`, {
      method: 'POST',
      headers: { host, 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${'a'.repeat(20_000)}`,
    });
    expect(huge.status).toBe(413);
    expect(await huge.text()).toMatch(/larger than 8 KiB/);
    for (const path of ['/login', '/logout']) {
      const broken = await app.request(`${base}${path}`, {
        method: 'POST',
        headers: { host, 'content-type': 'multipart/form-data; boundary=zzz' },
        body: 'this is not multipart at all',
      });
      // Before, both threw inside hono and answered 500 "internal error".
      expect(broken.status, path).toBe(path === '/login' ? 400 : 303);
    }
  });

  it('says which Origin and Host disagreed, and what to set on a reverse proxy', async () => {
    const app = inboxWith();
    const response = await app.request(`${base}/login`, {
      method: 'POST',
      headers: {
        host,
        origin: 'https://inbox.example.com',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ token }).toString(),
    });
    expect(response.status).toBe(403);
    const page = await response.text();
    expect(page).toContain('https://inbox.example.com');
    expect(page).toContain(host);
    expect(page).toContain('proxy_set_header Host $host');
  });

  it('refuses an API body over 64 KiB with 413 before reading it', async () => {
    const app = inboxWith();
    const cookie = await signIn(app);
    const response = await app.request(`${base}/api/decisions`, {
      method: 'POST',
      headers: { host, origin: base, cookie, 'content-type': 'application/json', 'x-csrf-token': 'x' },
      body: JSON.stringify({ callId: 'c', runId: 'r', decision: 'approve', comment: 'x'.repeat(100_000) }),
    });
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: string }).error).toMatch(/larger than 64 KiB/);
  });

  it('keeps at most a bounded number of closed runs in memory, evicting the oldest', async () => {
    let batch = 0;
    const fetched: string[] = [];
    const runsOf = (which: number) =>
      Array.from(
        { length: 40 },
        (_, index): CallSummary => ({
          callId: `call-${which}-${index}`,
          runId: `run-${which}-${index}`,
          tool: 'transfer_funds',
          status: 'succeeded',
          startedAt: '2026-12-05T10:00:00.000Z',
          workflowStatus: 'COMPLETED',
        }),
      );
    const app = inboxWith({
      list: (async () => runsOf(batch)) as ToolgateOperations['list'],
      get: (async (callId: string, options?: { runId?: string }) => {
        fetched.push(options?.runId ?? '');
        // No decision on these calls: the list skips them, so every one of the 40 is read.
        return { callId, runId: options?.runId, tool: 'transfer_funds', status: 'succeeded' } as CallRecord;
      }) as ToolgateOperations['get'],
    });
    const cookie = await signIn(app);
    const readDecisions = async () => {
      const response = await app.request(`${base}/api/decisions`, { headers: { host, cookie } });
      expect(response.status).toBe(200);
    };
    await readDecisions();
    expect(fetched).toHaveLength(40);
    await readDecisions();
    expect(fetched).toHaveLength(40); // cached: nothing read again
    const batches = Math.ceil(maximumClosedRecords / 40) + 1;
    for (batch = 1; batch <= batches; batch++) await readDecisions();
    expect(fetched).toHaveLength(40 * (batches + 1));
    // The first batch was evicted, so it is read again; the newest is still cached.
    batch = 0;
    await readDecisions();
    expect(fetched).toHaveLength(40 * (batches + 2));
    batch = batches;
    await readDecisions();
    expect(fetched).toHaveLength(40 * (batches + 2));
  });
});
