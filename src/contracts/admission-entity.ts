/**
 * The names every side uses to reach a scope's admission entity (workflows/admission-entity.ts):
 * its workflow type and ID, and its update, signals and query. Plain strings, so activity code
 * reaches the entity without importing workflow code.
 */
export const admissionEntity = {
  workflowType: 'toolgateAdmission',
  acquireUpdate: 'toolgateAdmissionAcquire',
  releaseSignal: 'toolgateAdmissionRelease',
  outcomeSignal: 'toolgateAdmissionOutcome',
  stateQuery: 'toolgateAdmissionState',
} as const;

/**
 * The workflow ID of a scope's entity: `toolgate-admission/<task queue>/tool:<name>` or
 * `.../tenant:<name>`. Limits hold per task queue, the unit a toolgate deployment's workers share,
 * and the entity runs on that queue, where those workers serve it.
 */
export function admissionWorkflowId(taskQueue: string, scope: string): string {
  return `toolgate-admission/${taskQueue}/${scope}`;
}
