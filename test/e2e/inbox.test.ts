import { copyFile, mkdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleCatalog } from '../../examples/contracts.ts';
import { ToolgateOperations } from '../../src/client/operations.ts';
import { approversFilePath, loadOrCreateApproverDirectory } from '../../src/inbox/approver-tokens.ts';
import { type RunningInbox, startInbox } from '../../src/inbox/inbox-app.ts';
import { agent, createHarness, type Harness } from '../support/harness.ts';
import { waitFor } from '../support/wait.ts';

const aliceToken = 'alice-token-0123456789abcdef';
const malloryToken = 'mallory-token-0123456789abcdef';
const hostileMemo = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">';

describe('approvals inbox in headless chromium', () => {
  let harness: Harness;
  let inbox: RunningInbox;
  let browser: Browser;
  let callId: string;

  beforeAll(async () => {
    harness = await createHarness();
    await writeFile(
      approversFilePath(harness.dataDir),
      JSON.stringify({
        approvers: [
          { name: 'alice', roles: ['finance'], token: aliceToken },
          // Signs in fine, but is on no tool's approvers list.
          { name: 'mallory', roles: ['support'], token: malloryToken },
        ],
      }),
    );
    const { directory } = await loadOrCreateApproverDirectory(harness.dataDir);
    inbox = await startInbox({
      operations: new ToolgateOperations({ client: harness.client, catalog: exampleCatalog }),
      approvers: directory,
      port: 0,
    });
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--no-first-run',
        '--disable-sync',
        '--disable-quic',
      ],
    });
    const started = await harness.client.start(
      {
        tool: 'transfer_funds',
        input: {
          reference: 'inbox-e2e-1',
          from: 'ACC-100',
          to: 'ACC-200',
          amountCents: 125_000,
          currency: 'EUR',
          memo: hostileMemo,
        },
      },
      agent,
    );
    callId = started.callId;
    await waitFor(async () =>
      (await harness.client.get(callId))?.status === 'awaiting_approval' ? true : undefined,
    );
  });
  afterAll(async () => {
    await browser?.close();
    await inbox?.close();
    await harness?.close();
  });

  async function signIn(token: string, waitForCall = callId): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
    const page = await context.newPage();
    await page.goto(inbox.url);
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.fill('#token', token);
    await page.click('button[type=submit]');
    await page.waitForSelector(`article[data-call-id="${waitForCall}"]`, { timeout: 15_000 });
    return page;
  }

  it('refuses a wrong token, and a signed-in non-approver cannot approve', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${inbox.url}/login`);
    await page.fill('#token', 'not-a-real-token-at-all');
    await page.click('button[type=submit]');
    await expect.poll(() => page.textContent('.error')).toContain('not valid');
    const api = await page.request.get(`${inbox.url}/api/pending`);
    expect(api.status()).toBe(401);
    await context.close();

    const mallory = await signIn(malloryToken);
    const card = mallory.locator(`article[data-call-id="${callId}"]`);
    await card.locator('button.approve').click();
    await expect.poll(() => mallory.textContent('#notice')).toMatch(/not an approver/);
    expect((await harness.client.get(callId))?.status).toBe('awaiting_approval');

    // A state change without the CSRF token is refused, even with a valid session cookie.
    const forged = await mallory.request.post(`${inbox.url}/api/decisions`, {
      data: { callId, decision: 'approve' },
    });
    expect(forged.status()).toBe(403);
    await mallory.context().close();
    expect(await harness.readLines(harness.tools.paths.ledgerFile)).toHaveLength(0);
  });

  it('shows arguments as text, with the preview; the approver approves and the transfer runs once', async () => {
    const page = await signIn(aliceToken);
    const card = page.locator(`article[data-call-id="${callId}"]`);
    await expect
      .poll(() => card.locator('pre.arguments').textContent())
      .toContain(JSON.stringify(hostileMemo));
    expect(await card.locator('.preview').textContent()).toContain(
      'Transfer 1250.00 EUR from ACC-100 to ACC-200',
    );
    expect(await card.textContent()).toContain('agent-7');
    expect(await card.textContent()).toContain('approval');
    // The memo was printed, not parsed: no element came from it and no script ran.
    expect(await card.locator('script, img').count()).toBe(0);
    expect(
      await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned),
    ).toBeUndefined();
    const csp = (await page.request.get(inbox.url)).headers()['content-security-policy'];
    expect(csp).toContain("script-src 'self'");

    await mkdir('test-results', { recursive: true });
    const screenshot = join('test-results', 'inbox.png');
    await page.screenshot({ path: screenshot, fullPage: true });
    expect((await stat(screenshot)).size).toBeGreaterThan(10_000);
    // The README's picture is refreshed only on request, so a test run leaves tracked files alone.
    if (process.env['TOOLGATE_UPDATE_SCREENSHOTS'] === '1') {
      await mkdir(join('docs', 'images'), { recursive: true });
      await copyFile(screenshot, join('docs', 'images', 'inbox.png'));
    }

    await card.locator('input').fill('matches invoice 1250');
    await card.locator('button.approve').click();
    const record = await harness.client.result(callId);
    expect(record.status).toBe('succeeded');
    expect(record.approval?.decidedBy).toBe('alice');
    expect(record.approval?.comment).toBe('matches invoice 1250');
    const ledger = await harness.readLines(harness.tools.paths.ledgerFile);
    expect(ledger).toHaveLength(1);
    expect(ledger[0]?.['reference']).toBe('inbox-e2e-1');

    // The live list drops the call and the recent decisions show it.
    await page.waitForSelector(`article[data-call-id="${callId}"]`, { state: 'detached', timeout: 15_000 });
    await expect
      .poll(() => page.locator('#decisions tbody').textContent(), { timeout: 15_000 })
      .toContain('alice');
    await page.screenshot({ path: join('test-results', 'inbox-after.png'), fullPage: true });
  });

  it('a decision is for the run the page showed: a call restarted with new arguments is refused', async () => {
    const transfer = (amountCents: number) => ({
      tool: 'transfer_funds',
      input: {
        reference: 'inbox-e2e-2',
        from: 'ACC-100',
        to: 'ACC-200',
        amountCents,
        currency: 'EUR',
        memo: null,
      },
    });
    const awaiting = (id: string, notRun?: string) =>
      waitFor(async () => {
        const record = await harness.client.get(id);
        return record?.status === 'awaiting_approval' && record.runId !== notRun ? record.runId : undefined;
      });
    const first = await harness.client.start(transfer(100), agent);
    const shownRun = await awaiting(first.callId);
    const page = await signIn(aliceToken, first.callId);
    const card = page.locator(`article[data-call-id="${first.callId}"]`);
    expect(await card.getAttribute('data-run-id')).toBe(shownRun);
    // The approver starts typing: the page keeps a focused card across refreshes.
    await card.locator('input').fill('looks fine');

    // While the page is not refreshing, someone rejects the call, which frees its key, and the model
    // asks again under the same key for 100,000 times the amount.
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route('**/api/pending', async (route) => {
      await held;
      await route.continue();
    });
    expect(
      (await harness.client.reject(first.callId, { approver: 'alice', comment: 'duplicate' })).accepted,
    ).toBe(true);
    const second = await harness.client.start(transfer(10_000_000), agent);
    expect(second.callId).toBe(first.callId);
    const newRun = await awaiting(first.callId, shownRun);

    // A decision made on the card as shown names the old run, and is refused before anything is signed.
    const { csrfToken } = (await (await page.request.get(`${inbox.url}/api/session`)).json()) as {
      csrfToken: string;
    };
    const stale = await page.request.post(`${inbox.url}/api/decisions`, {
      headers: { 'x-csrf-token': csrfToken },
      data: { callId: first.callId, runId: shownRun, decision: 'approve', comment: 'looks fine' },
    });
    expect(stale.status()).toBe(409);
    expect(((await stale.json()) as { error: string }).error).toMatch(/restarted/);
    const waiting = await harness.client.get(first.callId);
    expect(waiting?.status).toBe('awaiting_approval');
    expect(waiting?.refusedDecisions).toEqual([]);

    // The page, refreshing again, replaces the focused card with the new run's and says why.
    release();
    await page.unroute('**/api/pending');
    await expect.poll(() => page.textContent('#notice'), { timeout: 15_000 }).toMatch(/restarted/);
    await expect.poll(() => card.getAttribute('data-run-id'), { timeout: 15_000 }).toBe(newRun);
    expect(await card.locator('pre.arguments').textContent()).toContain('10000000');

    await harness.client.reject(first.callId, { approver: 'alice', comment: 'not this amount' });
    const ledger = await harness.readLines(harness.tools.paths.ledgerFile);
    expect(ledger.filter((line) => line['reference'] === 'inbox-e2e-2')).toHaveLength(0);
    await page.context().close();
  });

  it('a decision sent but not confirmed (202) is shown as a warning, and the card can be decided again', async () => {
    const started = await harness.client.start(
      {
        tool: 'transfer_funds',
        input: {
          reference: 'inbox-e2e-3',
          from: 'ACC-100',
          to: 'ACC-200',
          amountCents: 700,
          currency: 'EUR',
          memo: null,
        },
      },
      agent,
    );
    await waitFor(async () =>
      (await harness.client.get(started.callId))?.status === 'awaiting_approval' ? true : undefined,
    );
    const page = await signIn(aliceToken, started.callId);
    const card = page.locator(`article[data-call-id="${started.callId}"]`);
    // What the API answers when no worker checks the decision in time: the page must not say "Approved".
    await page.route('**/api/decisions', (route) =>
      route.request().method() === 'POST'
        ? route.fulfill({
            status: 503,
            contentType: 'application/json',
            body: JSON.stringify({
              error: `No worker checked the decision on ${started.callId} within 60 s: is a worker polling its task queue?`,
            }),
          })
        : route.continue(),
    );
    await card.locator('input').fill('ok');
    await card.locator('button.approve').click();
    await expect
      .poll(() => page.textContent('#notice'))
      .toMatch(/^Not decided: No worker checked the decision/);
    expect(await page.getAttribute('#notice', 'class')).toBe('error');
    await expect.poll(() => card.locator('button.approve').isDisabled()).toBe(false);
    expect(await card.getAttribute('data-decided')).toBeNull();

    // Deciding again, now through to the worker, counts once.
    await page.unroute('**/api/decisions');
    await card.locator('button.approve').click();
    await expect.poll(() => page.textContent('#notice')).toMatch(/^Approved /);
    expect((await harness.client.result(started.callId)).status).toBe('succeeded');
    const ledger = await harness.readLines(harness.tools.paths.ledgerFile);
    expect(ledger.filter((line) => line['reference'] === 'inbox-e2e-3')).toHaveLength(1);
    await page.context().close();
  });
});
