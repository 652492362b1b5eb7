/**
 * Gate decisions as OpenTelemetry span events (docs/operators.md "Traces"), on the span of the
 * workflow run. This module cannot import OpenTelemetry itself: it is shared between the workflows
 * of a thread and frozen (workflows/shared-libraries.ts), and OpenTelemetry's API keeps state of its
 * own. So a worker that traces loads `gate-events.ts` with each workflow, which puts a recorder on
 * the workflow's own globals; without it there is no recorder and nothing is recorded. An event is
 * no command: adding or removing one never changes what a history replays. Attributes are the
 * call's ID, tool, tier and the decision; never an argument.
 */
import type { CallState } from './call-state.ts';

export type GateName = 'idempotency' | 'allowlist' | 'validation' | 'approval' | 'execution';

type Attributes = Record<string, string>;

/** What `gate-events.ts` puts on a traced workflow's globals under `gateRecorderKey`. */
export interface GateRecorder {
  /** Adds an event to the active span. */
  event(name: string, attributes: Attributes): void;
  /** Sets attributes on the active span. */
  attributes(attributes: Attributes): void;
}

export const gateRecorderKey = Symbol.for('toolgate.gateRecorder');

function recorder(): GateRecorder | undefined {
  return (globalThis as { [gateRecorderKey]?: GateRecorder })[gateRecorderKey];
}

/** The gate passed: the call goes on to the next one. */
export function gatePassed(call: CallState, gate: GateName): void {
  recorder()?.event('toolgate.gate', {
    ...callAttributes(call),
    'toolgate.gate': gate,
    'toolgate.decision': 'pass',
  });
}

const gateOrder: readonly GateName[] = ['idempotency', 'allowlist', 'validation', 'approval', 'execution'];

/**
 * Denials decided by a gate other than the one in progress: the arguments are checked with the
 * admission (gate 2's activity) or by the execution activity, and the key rule of gate 1 is applied
 * once gates 2 and 3 have passed (docs/design.md, "Shape").
 */
const gateOfReason: Partial<Record<string, GateName>> = {
  INVALID_INPUT: 'validation',
  KEY_REQUIRED: 'idempotency',
  KEY_MISMATCH: 'idempotency',
};

/** The gate closed the call (a denial, a rejection, a failed or cancelled run), or was interrupted. */
export function gateStopped(call: CallState, inProgress: GateName): void {
  const { status, reason } = call.record;
  const gate = (reason && gateOfReason[reason]) || inProgress;
  // A later gate's denial found early: the gates before it passed.
  for (let index = gateOrder.indexOf(inProgress); index < gateOrder.indexOf(gate); index++) {
    gatePassed(call, gateOrder[index]!);
  }
  recorder()?.event('toolgate.gate', {
    ...callAttributes(call),
    'toolgate.gate': gate,
    'toolgate.decision': status,
    ...(reason ? { 'toolgate.reason': reason } : {}),
  });
}

/** The call's outcome, on the run's span. */
export function traceClosedCall(call: CallState): void {
  const { status, reason, effect } = call.record;
  recorder()?.attributes({
    ...callAttributes(call),
    'toolgate.status': status,
    'toolgate.effect': effect,
    ...(reason ? { 'toolgate.reason': reason } : {}),
  });
}

function callAttributes(call: CallState): Attributes {
  return {
    'toolgate.call_id': call.record.callId,
    'toolgate.tool': call.contract?.name ?? call.record.tool,
    ...(call.contract ? { 'toolgate.tier': call.contract.tier } : {}),
  };
}
