/** A programming error in how toolgate is called: wrong context, missing signer. Not a model error. */
export class ToolgateUsageError extends Error {
  override readonly name = 'ToolgateUsageError';
}

/**
 * The cluster cannot take toolgate's calls as it is: its namespace lacks toolgate's search
 * attributes. The message says how to register them.
 */
export class ClusterNotReadyError extends Error {
  override readonly name = 'ClusterNotReadyError';
}

/** No worker answered a call's record query: none runs on the call's task queue, or all are busy. */
export class NoWorkerAnsweredError extends Error {
  override readonly name = 'NoWorkerAnsweredError';
}
