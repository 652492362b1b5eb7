import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { type Context, Hono, type Next } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { z } from 'zod';
import type { CallSummary, ToolgateOperations } from '../client/operations.ts';
import type { DecisionOutcome } from '../client/toolgate-client.ts';
import { type CallRecord, terminalStatuses } from '../contracts/call-record.ts';
import { NoWorkerAnsweredError } from '../contracts/errors.ts';
import { approverRefusal } from '../policy/identity.ts';
import type { ApproverDirectory, InboxApprover } from './approver-tokens.ts';
import { inboxPage, inboxScript, inboxStyle, loginPage } from './assets.ts';
import { renderOverviewSvg, summarizeCalls } from './overview-chart.ts';

export interface InboxOptions {
  /** Its client must carry the approval signer: the inbox signs decisions as the signed-in approver. */
  readonly operations: ToolgateOperations;
  readonly approvers: ApproverDirectory;
  /** How long a sign-in lasts. Default 8 hours. */
  readonly sessionTtlMs?: number;
}

interface InboxSession {
  readonly approver: InboxApprover;
  readonly csrfToken: string;
  readonly expiresAtMs: number;
}

const sessionCookie = 'toolgate_inbox';

/** Strict enough that an injected `<script>` could not run even if escaping ever failed. */
const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const decisionBodySchema = z.strictObject({
  callId: z.string().min(1).max(512),
  // The run the page showed: a decision is made on that run's arguments and on no other's.
  runId: z.string().min(1).max(128),
  decision: z.enum(['approve', 'reject']),
  comment: z.string().max(2000).optional(),
});

/** A pending call as the inbox shows it. `input` is data for the page to print, never markup. */
export interface PendingCall {
  readonly callId: string;
  /** The run shown. A key freed by a rejection or expiry may start a new run, with other arguments. */
  readonly runId: string;
  readonly tool: string;
  readonly tier?: string;
  readonly tenant: string;
  readonly principal: string;
  readonly principalKind: string;
  readonly input: unknown;
  readonly preview?: string;
  readonly approvers: readonly string[];
  readonly expiresAt: string;
  readonly timeLeftMs: number;
  readonly refusedDecisions: CallRecord['refusedDecisions'];
}

export interface RecentDecision {
  readonly callId: string;
  readonly tool: string;
  readonly decision: string;
  readonly decidedBy: string;
  readonly decidedAt: string;
  readonly comment?: string;
  readonly status: string;
}

/** How many closed runs' decisions the inbox keeps in memory; the list shows at most 15 of 40. */
export const maximumClosedRecords = 200;

/** The row the recent-decisions list shows for a call, or null for a call no one decided. */
function recentDecisionOf(record: CallRecord): RecentDecision | null {
  const approval = record.approval;
  if (!approval?.decision || !approval.decidedAt) return null;
  return {
    callId: record.callId,
    tool: record.tool,
    decision: approval.decision,
    decidedBy: approval.decidedBy ?? 'unknown',
    decidedAt: approval.decidedAt,
    ...(approval.comment !== undefined ? { comment: approval.comment } : {}),
    status: record.status,
  };
}

/** Whether this approver is on the call's list: by name or by `role:<name>`, and not the requester. */
export function mayDecide(approver: InboxApprover, record: CallRecord): string | undefined {
  return approverRefusal({
    approver: approver.name,
    roles: approver.roles,
    requester: record.principal,
    approvers: record.approval?.approvers ?? [],
    tool: record.tool,
  });
}

function sameSecret(left: string, right: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(left), digest(right));
}

/** What the inbox's handlers share: its options, the signed-in sessions and closed runs' decisions. */
interface InboxState {
  readonly operations: ToolgateOperations;
  readonly approvers: ApproverDirectory;
  readonly sessionTtlMs: number;
  readonly sessions: Map<string, InboxSession>;
  /**
   * Closed records never change, so recent decisions are fetched once per run. Only the fields the
   * list shows are kept, and only for the newest runs: the map never grows past its bound.
   */
  readonly closedRecords: Map<string, RecentDecision | null>;
}

/** Why an API request is refused, in words, and the status to answer it with. */
interface Refusal {
  readonly error: string;
  readonly status: ContentfulStatusCode;
}

/** A decision as the approver sent it, its comment trimmed. */
interface DecisionRequest {
  readonly callId: string;
  readonly runId: string;
  readonly decision: 'approve' | 'reject';
  readonly comment: string | undefined;
}

// Sign-in and sign-out forms hold a token or two; decisions hold a comment. Anything much bigger
// is refused before it is read, with 413.
const formLimit = bodyLimit({
  maxSize: 8 * 1024,
  onError: (context) => context.text('The form is larger than 8 KiB; sign in with the token alone.', 413),
});
const apiLimit = bodyLimit({
  maxSize: 64 * 1024,
  onError: (context) => context.json({ error: 'The request body is larger than 64 KiB.' }, 413),
});

/**
 * The approvals inbox as a hono app: a sign-in page, the inbox page, and a JSON API under /api.
 * Sign-in is by approver token; every state change needs the session's CSRF token.
 */
export function createInboxApp(options: InboxOptions): Hono {
  const state: InboxState = {
    operations: options.operations,
    approvers: options.approvers,
    sessionTtlMs: options.sessionTtlMs ?? 8 * 60 * 60 * 1000,
    sessions: new Map(),
    closedRecords: new Map(),
  };
  const { operations } = state;
  const app = new Hono();

  app.use('*', addSecurityHeaders);

  app.get('/assets/inbox.js', (context) =>
    context.body(inboxScript, 200, { 'content-type': 'text/javascript; charset=utf-8' }),
  );
  app.get('/assets/inbox.css', (context) =>
    context.body(inboxStyle, 200, { 'content-type': 'text/css; charset=utf-8' }),
  );

  app.get('/login', (context) => context.html(loginPage()));
  app.post('/login', formLimit, (context) => signIn(state, context));
  app.post('/logout', formLimit, (context) => signOut(state, context));

  app.get('/', (context) =>
    currentSession(state, context) ? context.html(inboxPage) : context.redirect('/login', 303),
  );

  // Everything under /api needs a session.
  app.use('/api/*', apiLimit, async (context, next) => {
    if (!currentSession(state, context)) return context.json({ error: 'Sign in first.' }, 401);
    await next();
  });

  app.get('/api/session', (context) => {
    const session = currentSession(state, context)!;
    return context.json({
      approver: session.approver.name,
      roles: session.approver.roles,
      csrfToken: session.csrfToken,
    });
  });

  app.get('/api/pending', async (context) => context.json({ calls: await pendingCalls(operations) }));
  app.get('/api/decisions', async (context) => context.json({ decisions: await recentDecisions(state) }));
  app.post('/api/decisions', (context) => decide(state, context));

  app.get('/api/overview', async (context) =>
    context.json(summarizeCalls(await operations.list({ since: '24h', limit: 1000 }))),
  );
  app.get('/api/overview.svg', async (context) => {
    const svg = renderOverviewSvg(summarizeCalls(await operations.list({ since: '24h', limit: 1000 })));
    return context.body(svg, 200, { 'content-type': 'image/svg+xml; charset=utf-8' });
  });

  app.onError((error, context) => {
    process.stderr.write(
      `[inbox] ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    return context.json({ error: 'The inbox hit an internal error; see its log.' }, 500);
  });
  return app;
}

async function addSecurityHeaders(context: Context, next: Next): Promise<void> {
  await next();
  context.header('Content-Security-Policy', contentSecurityPolicy);
  context.header('X-Content-Type-Options', 'nosniff');
  context.header('X-Frame-Options', 'DENY');
  // Not no-referrer: under it Chromium sends `Origin: null` on form posts, defeating the origin check.
  context.header('Referrer-Policy', 'same-origin');
  context.header('Cache-Control', 'no-store');
}

// --- Sessions ------------------------------------------------------------------------------------

function currentSession(state: InboxState, context: Context): InboxSession | undefined {
  const id = getCookie(context, sessionCookie);
  if (!id) return undefined;
  const session = state.sessions.get(id);
  if (!session) return undefined;
  if (session.expiresAtMs < Date.now()) {
    state.sessions.delete(id);
    return undefined;
  }
  return session;
}

async function signIn(state: InboxState, context: Context): Promise<Response> {
  const crossSite = foreignOrigin(context);
  if (crossSite) return context.html(loginPage(crossSite), 403);
  const form = await readForm(context);
  if (!form) return context.html(loginPage('The sign-in form could not be read; send it again.'), 400);
  const token = typeof form['token'] === 'string' ? form['token'] : '';
  const approver = state.approvers.authenticate(token);
  if (!approver) return context.html(loginPage('That token is not valid.'), 401);
  const id = randomBytes(32).toString('base64url');
  state.sessions.set(id, {
    approver,
    csrfToken: randomBytes(32).toString('base64url'),
    expiresAtMs: Date.now() + state.sessionTtlMs,
  });
  setCookie(context, sessionCookie, id, {
    httpOnly: true,
    sameSite: 'Strict',
    path: '/',
    maxAge: Math.floor(state.sessionTtlMs / 1000),
  });
  return context.redirect('/', 303);
}

async function signOut(state: InboxState, context: Context): Promise<Response> {
  const session = currentSession(state, context);
  const form = (await readForm(context)) ?? {};
  if (session && typeof form['csrf'] === 'string' && sameSecret(form['csrf'], session.csrfToken)) {
    state.sessions.delete(getCookie(context, sessionCookie) ?? '');
    deleteCookie(context, sessionCookie, { path: '/' });
  }
  return context.redirect('/login', 303);
}

/**
 * A cross-site form post carries a foreign Origin; refuse it even before the CSRF token check.
 * Returns what is wrong, in words, or undefined. Behind a proxy that rewrites Host, every post
 * fails this check, so the words name both values and the proxy setting to change.
 */
function foreignOrigin(context: Context): string | undefined {
  const origin = context.req.header('origin');
  if (!origin) return undefined;
  const host = context.req.header('host') ?? '';
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    originHost = '';
  }
  if (originHost === host) return undefined;
  return (
    `This request came from ${JSON.stringify(origin.slice(0, 200))}, but the inbox is served as ` +
    `${JSON.stringify(host.slice(0, 200))}, so it was refused as cross-site. If the inbox is behind a ` +
    'reverse proxy, have the proxy pass the original Host header (nginx: proxy_set_header Host $host).'
  );
}

/** The form's fields, or undefined when the body is not a form that can be read. */
async function readForm(context: Context): Promise<Record<string, unknown> | undefined> {
  try {
    return await context.req.parseBody();
  } catch {
    return undefined;
  }
}

// --- Lists ---------------------------------------------------------------------------------------

/** The calls waiting for a decision, the soonest to expire first. */
async function pendingCalls(operations: ToolgateOperations): Promise<PendingCall[]> {
  const listed = await operations.list({ status: 'awaiting_approval', limit: 100 });
  const seen = new Set<string>();
  const ids = listed.map((call) => call.callId).filter((id) => !seen.has(id) && seen.add(id));
  const records = await Promise.all(ids.map((id) => operations.client.get(id).catch(() => undefined)));
  const now = Date.now();
  return (
    records
      // Visibility lags: a call decided a moment ago may still be listed as waiting.
      .filter((record): record is CallRecord => record?.status === 'awaiting_approval' && !!record.approval)
      .map((record) => pendingCallOf(record, now))
      .sort((left, right) => left.timeLeftMs - right.timeLeftMs)
  );
}

/** The card the inbox shows for a call that waits for approval (its record has an approval). */
function pendingCallOf(record: CallRecord, now: number): PendingCall {
  const approval = record.approval!;
  return {
    callId: record.callId,
    runId: record.runId,
    tool: record.tool,
    ...(record.tier ? { tier: record.tier } : {}),
    tenant: record.tenant,
    principal: record.principal,
    principalKind: record.principalKind,
    input: record.input,
    ...(approval.preview ? { preview: approval.preview } : {}),
    approvers: approval.approvers,
    expiresAt: approval.expiresAt,
    timeLeftMs: Math.max(0, Date.parse(approval.expiresAt) - now),
    refusedDecisions: record.refusedDecisions,
  };
}

/** The newest decisions, at most 15, newest first. */
async function recentDecisions(state: InboxState): Promise<RecentDecision[]> {
  // Only calls past their decision. Visibility lists open runs first, so with the waiting calls
  // included, 40 of them would crowd every decision out of the list.
  const listed = await state.operations.list({
    tier: 'approval',
    status: ['running', ...terminalStatuses],
    limit: 40,
  });
  const decisions: RecentDecision[] = [];
  for (const call of listed) {
    if (call.workflowStatus === 'RUNNING' && call.status === 'awaiting_approval') continue;
    const decision = await decisionOfRun(state, call);
    if (!decision) continue;
    decisions.push(decision);
    if (decisions.length >= 15) break;
  }
  decisions.sort((left, right) => right.decidedAt.localeCompare(left.decidedAt));
  return decisions;
}

/**
 * The decision on a listed run: null when no one decided it, undefined when its record cannot be
 * read. A closed run's is remembered, so it is fetched only once.
 */
async function decisionOfRun(
  state: InboxState,
  call: CallSummary,
): Promise<RecentDecision | null | undefined> {
  const remembered = state.closedRecords.get(call.runId);
  if (remembered !== undefined) return remembered;
  const record = await state.operations.get(call.callId, { runId: call.runId }).catch(() => undefined);
  if (!record) return undefined;
  const decision = recentDecisionOf(record);
  if (call.workflowStatus !== 'RUNNING') rememberClosed(state.closedRecords, call.runId, decision);
  return decision;
}

function rememberClosed(
  closedRecords: Map<string, RecentDecision | null>,
  runId: string,
  decision: RecentDecision | null,
): void {
  closedRecords.set(runId, decision);
  if (closedRecords.size > maximumClosedRecords) {
    closedRecords.delete(closedRecords.keys().next().value as string);
  }
}

// --- Decisions -----------------------------------------------------------------------------------

/**
 * Takes an approver's decision: only from the inbox's own page, as JSON, on the run the page
 * showed, while that run still waits, and only from someone on its list of approvers.
 */
async function decide(state: InboxState, context: Context): Promise<Response> {
  const session = currentSession(state, context)!;
  const refusedRequest = requestRefusal(context, session);
  if (refusedRequest) return refuse(context, refusedRequest);
  const request = await readDecision(context);
  if ('error' in request) return refuse(context, request);
  const record = await state.operations.client.get(request.callId).catch(() => undefined);
  const refusedCall = decisionRefusal(session.approver, record, request.runId);
  if (refusedCall) return refuse(context, refusedCall);
  let outcome: DecisionOutcome;
  try {
    outcome = await submitDecision(state.operations, session.approver, request);
  } catch (error) {
    // No worker checked it in time: say so; it may still be checked when one does.
    if (error instanceof NoWorkerAnsweredError) return context.json({ error: error.message }, 503);
    throw error;
  }
  if (outcome.accepted) return context.json({ state: outcome.state }, 200);
  return context.json({ state: outcome.state, error: outcome.reason ?? 'The decision was refused.' }, 409);
}

function refuse(context: Context, refusal: Refusal): Response {
  return context.json({ error: refusal.error }, refusal.status);
}

/** Refuses a decision post that is cross-site, lacks the session's CSRF token, or is not JSON. */
function requestRefusal(context: Context, session: InboxSession): Refusal | undefined {
  const presented = context.req.header('x-csrf-token') ?? '';
  const crossSite = foreignOrigin(context);
  if (crossSite) return { error: crossSite, status: 403 };
  if (!sameSecret(presented, session.csrfToken)) {
    return { error: 'The CSRF token is missing or wrong; reload the page.', status: 403 };
  }
  if (!(context.req.header('content-type') ?? '').startsWith('application/json')) {
    return { error: 'Send the decision as JSON.', status: 415 };
  }
  return undefined;
}

/** The decision in the body, or why it cannot be taken: malformed, or a rejection without a reason. */
async function readDecision(context: Context): Promise<DecisionRequest | Refusal> {
  const parsed = decisionBodySchema.safeParse(await context.req.json().catch(() => undefined));
  if (!parsed.success) return { error: 'The decision is malformed.', status: 400 };
  const { callId, runId, decision } = parsed.data;
  const comment = parsed.data.comment?.trim();
  if (decision === 'reject' && !comment) return { error: 'Say why you reject it (comment).', status: 400 };
  return { callId, runId, decision, comment };
}

/** Why this approver may not decide this call now, or undefined when they may. */
function decisionRefusal(
  approver: InboxApprover,
  record: CallRecord | undefined,
  runId: string,
): Refusal | undefined {
  if (!record) return { error: 'There is no such call.', status: 404 };
  if (record.runId !== runId) {
    return {
      error:
        'This call was restarted since the page showed it, and may now ask for other arguments. ' +
        'Read its new card before deciding.',
      status: 409,
    };
  }
  if (record.status !== 'awaiting_approval') {
    return { error: `The call is ${record.status}; it no longer waits for a decision.`, status: 409 };
  }
  const refusal = mayDecide(approver, record);
  if (refusal) return { error: `You may not decide this call: ${refusal}.`, status: 403 };
  return undefined;
}

/** Signs and sends the decision as the signed-in approver, for the run the page showed. */
function submitDecision(
  operations: ToolgateOperations,
  approver: InboxApprover,
  { callId, runId, decision, comment }: DecisionRequest,
): Promise<DecisionOutcome> {
  const decisionOptions = {
    runId,
    approver: approver.name,
    roles: approver.roles,
    ...(comment ? { comment } : {}),
  };
  return decision === 'approve'
    ? operations.client.approve(callId, decisionOptions)
    : operations.client.reject(callId, decisionOptions);
}

export interface RunningInbox {
  readonly url: string;
  close(): Promise<void>;
}

/** Serves the inbox. Binds 127.0.0.1 unless told otherwise: it is an operator surface. */
export async function startInbox(
  options: InboxOptions & { readonly host?: string; readonly port?: number },
): Promise<RunningInbox> {
  const app = createInboxApp(options);
  const host = options.host ?? '127.0.0.1';
  // Requests still being answered (a list, a decision): closing waits for them, so nothing of the
  // inbox is left talking to Temporal once `close()` returns and the caller closes its connection.
  const inFlight = new Set<Promise<unknown>>();
  const fetch = (...args: Parameters<typeof app.fetch>) => {
    const answer = Promise.resolve(app.fetch(...args));
    inFlight.add(answer);
    const done = () => inFlight.delete(answer);
    answer.then(done, done);
    return answer;
  };
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const started = serve({ fetch, hostname: host, port: options.port ?? 8787 }, () => resolve(started));
    started.once('error', reject);
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}`,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
      await Promise.allSettled([...inFlight]);
    },
  };
}
