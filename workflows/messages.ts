import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { CallRecord } from '../src/contracts/call-record.ts';

/**
 * A human's approve or reject decision. The payload should be a signed decision; anything else is
 * refused and recorded, and the call keeps waiting.
 */
export const decisionSignal = defineSignal<[unknown]>('decision');

/** The live call record: status, transitions, refused decisions. */
export const recordQuery = defineQuery<CallRecord>('record');
