import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { DecisionAnswer } from '../src/contracts/approval.ts';
import type { CallRecord } from '../src/contracts/call-record.ts';

/**
 * A human's approve or reject decision. The payload should be a signed decision; anything else is
 * refused and recorded, and the call keeps waiting.
 */
export const decisionSignal = defineSignal<[unknown]>('decision');

/**
 * The same decision as a Workflow Update: verified as a signal's is, and answered with whether it
 * counted (docs/design.md, "Approval"). Its validator checks only the shape.
 */
export const decisionUpdate = defineUpdate<DecisionAnswer, [unknown]>('toolgateDecision');

/** The live call record: status, transitions, refused decisions. */
export const recordQuery = defineQuery<CallRecord>('record');
