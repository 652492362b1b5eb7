// The client's errors belong to toolgate's one family (src/contracts/errors.ts).
export { ClusterNotReadyError, NoWorkerAnsweredError, ToolgateUsageError } from '../contracts/errors.ts';
