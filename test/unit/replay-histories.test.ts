import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { exampleToolSet } from '../../examples/tool-set.ts';
import { bundleToolgateWorkflows } from '../../src/worker/create-worker.ts';
import { installRuntimeLogging } from '../../src/worker/runtime-logging.ts';
import { childRefusesLongToolNamePatch } from '../../workflows/child-call.ts';
import {
  decisionsQueuedAtExpiryPatch,
  keyRuleAfterGatesPatch,
  nonceUsedWhenCountedPatch,
} from '../../workflows/tool-call.ts';

const root = fileURLToPath(new URL('../fixtures/histories/', import.meta.url));
const firstProtocolPaths = [
  'succeeded',
  'denied-not-allowed',
  'denied-invalid-input',
  'approved',
  'rejected',
  'expired',
  'timeout',
  'cancelled',
];
const secondProtocolPaths = [...firstProtocolPaths, 'readonly-denied-not-allowed'];
/** Recorded since the `decisions-queued-at-expiry` patch, with how each ends its expiry timer. */
const approvalEndsSincePatch = [
  ['approved-since-patch', 'timerCanceledEventAttributes'],
  ['rejected-since-patch', 'timerCanceledEventAttributes'],
  ['approval-cancelled-since-patch', 'timerCanceledEventAttributes'],
  ['expired-since-patch', 'timerFiredEventAttributes'],
] as const;
/**
 * Every gate protocol keeps its histories: a worker must replay calls started under any protocol
 * it still serves. Protocol 2 adds the readonly refusal that its execution activity now decides;
 * protocol 3 the invalid arguments of a non-readonly call, refused by the admission local activity.
 */
const requiredPaths: Record<string, readonly string[]> = {
  'protocol-1': firstProtocolPaths,
  'protocol-2': secondProtocolPaths,
  // Recorded later (round 25), for protocol 3 only: a cancel while awaiting approval, an
  // irreversible outcome nobody knows (completed, keeping its key), a reversible call and its undo.
  'protocol-3': [
    ...secondProtocolPaths,
    'approval-denied-invalid-input',
    'approval-cancelled',
    'irreversible-outcome-unknown',
    'reversible-succeeded',
    'undo',
    // A valid decision queued behind a forged one at the expiry: before and after the
    // `decisions-queued-at-expiry` patch (session of 2026-12-04).
    'approval-queued-at-expiry-before-patch',
    'approval-queued-at-expiry',
    'approval-signed-after-expiry',
    // The four ends of an approval wait under that patch (one timer for the whole wait), and a
    // cancel that the tool ignores (session of 2026-12-04, the next one).
    ...approvalEndsSincePatch.map(([name]) => name),
    'cancel-ignored',
    // A contract that derives its key, given arguments it cannot derive one from: recorded while
    // that was denied KEY_REQUIRED; the same point now denies INVALID_INPUT, with the same commands.
    'approval-derived-key-invalid-input',
    // The fast path (a readonly tool run as a local activity): recorded with a catalog that has
    // such a tool, and replayed with its bundle (see `fastPathFixture`).
    'fast-path-succeeded',
    'fast-path-denied-invalid-input',
    'fast-path-failed',
    // An agent workflow's child call with an over-long tool name, before and after the
    // `child-refuses-long-tool-name` patch (session of 2026-12-05): replayed with the example
    // agent's bundle (see `agentFixture`).
    'child-long-tool-name-before-patch',
    'child-long-tool-name',
    // Keyless calls of tiers that need a key, denied KEY_REQUIRED before anything else, and a
    // forged decision that used up the nonce of the valid one after it: recorded before the
    // `key-rule-after-gates` and `nonce-used-when-counted` patches.
    'keyless-not-allowed-before-patch',
    'keyless-invalid-input-before-patch',
    'keyless-key-required-before-patch',
    'nonce-claimed-by-forgery-before-patch',
    // The same calls since those patches: NOT_ALLOWED, INVALID_INPUT, then KEY_REQUIRED after an
    // admission local activity; the valid decision counts. And a workflow started by hand without a
    // call context, closed at once INVALID_INPUT.
    'keyless-not-allowed',
    'keyless-invalid-input',
    'keyless-key-required',
    'nonce-claimed-by-forgery',
    'malformed-start',
    // An admission entity (quotas and breakers kept in the cluster): its first run, up to its
    // continue-as-new, and a run that carries the state on.
    'admission-entity',
    'admission-entity-continued',
    // Decisions by Workflow Update (the `toolgateDecision` handler, session of 2026-12-06): a forged
    // one refused then a valid one accepted, a rejection, and the raw signal path beside them.
    'approved-by-update',
    'rejected-by-update',
    'approved-by-signal',
    // A transfer the contract's `approval.when` let run without a human (same session).
    'approval-not-needed',
    // Two distinct approvers (`approval.quorum`), one of them twice under another spelling (same session).
    'approved-by-quorum',
  ],
};
/** The example catalog has no fast-path tool: these histories replay with test/support/workflows/fast-path.ts. */
const fastPathFixture = (name: string) => name.startsWith('fast-path-');
/** Agent workflows (the example's `toolCallChild`): these replay with examples/agent/workflows.ts. */
const agentFixture = (name: string) => name.startsWith('child-');
const agentWorkflowsPath = fileURLToPath(new URL('../../examples/agent/workflows.ts', import.meta.url));
const fixtures = Object.entries(requiredPaths).flatMap(([protocol, names]) =>
  names.map((name) => ({ protocol, name, id: `${protocol}/${name}` })),
);

type RecordedEvent = Record<
  string,
  { markerName?: string; details?: Record<string, { payloads?: Array<{ data?: string }> }> }
>;

async function recordedEvents(name: string, protocol = 'protocol-3'): Promise<RecordedEvent[]> {
  return (
    JSON.parse(await readFile(`${root}${protocol}/${name}.json`, 'utf8')) as { events: RecordedEvent[] }
  ).events;
}

/** The IDs of the patches a history's markers record, in order. */
function patchesIn(events: RecordedEvent[]): string[] {
  return events
    .map((event) => event['markerRecordedEventAttributes'])
    .filter((marker) => marker?.markerName === 'core_patch')
    .map(
      (marker) =>
        JSON.parse(Buffer.from(marker!.details!['patch-data']!.payloads![0]!.data!, 'base64').toString()).id,
    );
}

describe('recorded histories replay against the current workflow code', () => {
  let code: string;
  let fastPathCode: string;
  let agentCode: string;
  beforeAll(async () => {
    installRuntimeLogging();
    code = (await bundleToolgateWorkflows(exampleToolSet.workflowsPath)).code;
    fastPathCode = (
      await bundleToolgateWorkflows(
        fileURLToPath(new URL('../support/workflows/fast-path.ts', import.meta.url)),
      )
    ).code;
    agentCode = (await bundleToolgateWorkflows(agentWorkflowsPath)).code;
  }, 120_000);

  it('has a fixture for every path through the gates, for every protocol', async () => {
    expect((await readdir(root)).sort()).toEqual(Object.keys(requiredPaths).sort());
    for (const [protocol, expected] of Object.entries(requiredPaths)) {
      const names = (await readdir(`${root}${protocol}`))
        .filter((name) => name.endsWith('.json'))
        .map((name) => name.replace(/\.json$/, ''));
      expect(names.sort()).toEqual([...expected].sort());
    }
  });

  it('replays every fixture without a nondeterminism error', async () => {
    const results: Array<{ workflowId: string; error: unknown }> = [];
    for (const [bundle, group] of [
      [code, fixtures.filter((fixture) => !fastPathFixture(fixture.name) && !agentFixture(fixture.name))],
      [fastPathCode, fixtures.filter((fixture) => fastPathFixture(fixture.name))],
      [agentCode, fixtures.filter((fixture) => agentFixture(fixture.name))],
    ] as const) {
      const histories = await Promise.all(
        group.map(async ({ protocol, name, id }) => ({
          workflowId: id,
          history: historyFromJSON(JSON.parse(await readFile(`${root}${protocol}/${name}.json`, 'utf8'))),
        })),
      );
      for await (const result of Worker.runReplayHistories({ workflowBundle: { code: bundle } }, histories)) {
        results.push({ workflowId: result.workflowId, error: result.error });
      }
    }
    expect(results.map((result) => result.workflowId).sort()).toEqual(
      fixtures.map((fixture) => fixture.id).sort(),
    );
    expect(
      results
        .filter((result) => result.error)
        .map((result) => `${result.workflowId}: ${String(result.error)}`),
    ).toEqual([]);
  }, 120_000);

  it('the approval waits recorded since the patch ran under it, each on one expiry timer', async () => {
    for (const [name, timerEnd] of approvalEndsSincePatch) {
      const events = await recordedEvents(name);
      expect({ name, patches: patchesIn(events) }).toEqual({ name, patches: [decisionsQueuedAtExpiryPatch] });
      const count = (type: string) => events.filter((event) => event[type] !== undefined).length;
      expect({ name, started: count('timerStartedEventAttributes'), ended: count(timerEnd) }).toEqual({
        name,
        started: 1,
        ended: 1,
      });
    }
  });

  it('the decision fixtures took the path they are named for: Updates answered, or a signal', async () => {
    const count = (events: RecordedEvent[], type: string) =>
      events.filter((event) => event[type] !== undefined).length;
    const approved = await recordedEvents('approved-by-update');
    // The forged decision and the valid one: each accepted as an Update and completed with its answer.
    expect(count(approved, 'workflowExecutionUpdateAcceptedEventAttributes')).toBe(2);
    expect(count(approved, 'workflowExecutionUpdateCompletedEventAttributes')).toBe(2);
    expect(count(approved, 'workflowExecutionSignaledEventAttributes')).toBe(0);
    const rejected = await recordedEvents('rejected-by-update');
    expect(count(rejected, 'workflowExecutionUpdateCompletedEventAttributes')).toBe(1);
    // No human needed: no expiry timer, straight to the tool.
    const notNeeded = await recordedEvents('approval-not-needed');
    expect(count(notNeeded, 'timerStartedEventAttributes')).toBe(0);
    expect(count(notNeeded, 'activityTaskScheduledEventAttributes')).toBe(1);
    // The quorum: three Updates (alice, Alice refused, bob), one tool run.
    const quorum = await recordedEvents('approved-by-quorum');
    expect(count(quorum, 'workflowExecutionUpdateCompletedEventAttributes')).toBe(3);
    expect(count(quorum, 'activityTaskScheduledEventAttributes')).toBe(1);
    const signalled = await recordedEvents('approved-by-signal');
    expect(count(signalled, 'workflowExecutionSignaledEventAttributes')).toBe(1);
    expect(count(signalled, 'workflowExecutionUpdateAcceptedEventAttributes')).toBe(0);
  });

  it('keyless calls of key-requiring tiers: the key rule first before its patch, the allowlist first since', async () => {
    const localActivities = (events: RecordedEvent[]) =>
      events.filter((event) => event['markerRecordedEventAttributes']?.markerName === 'core_local_activity')
        .length;
    for (const name of ['keyless-not-allowed', 'keyless-invalid-input', 'keyless-key-required']) {
      const before = await recordedEvents(`${name}-before-patch`);
      const since = await recordedEvents(name);
      expect({ name, patches: patchesIn(before), admissions: localActivities(before) }).toEqual({
        name,
        patches: [],
        admissions: 0,
      });
      expect({ name, patches: patchesIn(since), admissions: localActivities(since) }).toEqual({
        name,
        patches: [keyRuleAfterGatesPatch],
        admissions: 1,
      });
    }
  });

  it("a forged decision claiming a valid one's nonce: the nonce patch is recorded only since it", async () => {
    expect(patchesIn(await recordedEvents('nonce-claimed-by-forgery-before-patch'))).toEqual([
      decisionsQueuedAtExpiryPatch,
    ]);
    expect(patchesIn(await recordedEvents('nonce-claimed-by-forgery'))).toEqual([
      decisionsQueuedAtExpiryPatch,
      nonceUsedWhenCountedPatch,
    ]);
  });

  it('an over-long tool name in a child call: a child before the patch, none and a marker since', async () => {
    const before = await recordedEvents('child-long-tool-name-before-patch');
    const since = await recordedEvents('child-long-tool-name');
    const childStarts = (events: RecordedEvent[]) =>
      events.filter((event) => event['startChildWorkflowExecutionInitiatedEventAttributes']).length;
    expect({ patches: patchesIn(before), children: childStarts(before) }).toEqual({
      patches: [],
      children: 1,
    });
    expect({ patches: patchesIn(since), children: childStarts(since) }).toEqual({
      patches: [childRefusesLongToolNamePatch],
      children: 0,
    });
  });

  // The rollout rule in docs/operators.md ("Upgrading to gate protocol 3"): workers before clients.
  // A protocol-3 readonly call whose first workflow task ran on an older worker took the older
  // path (runTool); a worker of this release replaying it would schedule checkAndRunTool instead.
  it('protocol 3 started on an older worker: a readonly call fails to replay on this release', async () => {
    const recorded = JSON.parse(await readFile(`${root}protocol-2/succeeded.json`, 'utf8'));
    const payload = recorded.events[0].workflowExecutionStartedEventAttributes.input.payloads[0];
    const request = JSON.parse(Buffer.from(payload.data, 'base64').toString('utf8'));
    expect(request.protocol).toBe(2);
    payload.data = Buffer.from(JSON.stringify({ ...request, protocol: 3 })).toString('base64');
    await expect(
      Worker.runReplayHistory({ workflowBundle: { code } }, historyFromJSON(recorded), 'relabelled'),
    ).rejects.toThrow(/'runTool' does not match activity type of activity command 'checkAndRunTool'/);
  }, 120_000);
});

describe('a tightened tool schema and the calls recorded before it', () => {
  let tightened: string;
  beforeAll(async () => {
    tightened = (
      await bundleToolgateWorkflows(
        fileURLToPath(new URL('../support/workflows/tightened-transfer.ts', import.meta.url)),
      )
    ).code;
  }, 120_000);
  const replay = (protocol: string, name: string) =>
    readFile(`${root}${protocol}/${name}.json`, 'utf8').then((text) =>
      Worker.runReplayHistory(
        { workflowBundle: { code: tightened } },
        historyFromJSON(JSON.parse(text)),
        name,
      ),
    );

  // Protocols 1 and 2 validate in the workflow and do not record the verdict, so a release whose
  // schema refuses what an open call was validated with breaks that call's replay. This pins the
  // limitation for calls started before protocol 3 (docs/operators.md).
  it('protocol 2: fails the replay of an approval-tier call that passed the older schema', async () => {
    for (const name of ['approved', 'expired']) {
      await expect(replay('protocol-2', name)).rejects.toThrow(/Nondeterminism|TMPRL1100/);
    }
    // The readonly call recorded with the same catalog does not use the tightened tool: it replays.
    await replay('protocol-2', 'succeeded');
  }, 120_000);

  // Protocol 3 records the verdict with the admission; the workflow never validates again.
  it('protocol 3: replays every recorded call, the approval-tier ones included', async () => {
    // The undo history is a toolUndo workflow and the child ones an agent workflow, which the
    // tightened bundle does not carry; the fast-path ones call a tool it does not have.
    for (const name of requiredPaths['protocol-3']!.filter(
      (name) => name !== 'undo' && !fastPathFixture(name) && !agentFixture(name),
    )) {
      await replay('protocol-3', name);
    }
  }, 120_000);
});

describe('the fast path, replayed against a catalog without its tool', () => {
  // Pins why the fast-path histories need their own bundle: with the example catalog the tool is
  // unknown, the workflow denies the call without running anything, and the replay breaks.
  it('fails the replay of a fast-path call on a bundle whose catalog lacks the tool', async () => {
    installRuntimeLogging();
    const { code } = await bundleToolgateWorkflows(exampleToolSet.workflowsPath);
    const text = await readFile(`${root}protocol-3/fast-path-succeeded.json`, 'utf8');
    await expect(
      Worker.runReplayHistory({ workflowBundle: { code } }, historyFromJSON(JSON.parse(text)), 'fast'),
    ).rejects.toThrow(/Nondeterminism|TMPRL1100/);
  }, 120_000);
});
