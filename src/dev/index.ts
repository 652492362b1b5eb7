export { claimFileOf, DatabaseInUseError } from './database-claim.ts';
export type { DevServer, DevServerOptions } from './dev-server.ts';
export { startDevServer } from './dev-server.ts';
export type { FindCliOptions, FoundCli } from './find-cli.ts';
export { cachedCliPath, defaultCacheDir, findTemporalCli, temporalCliVersion } from './find-cli.ts';
export { findFreePort, isPortFree } from './ports.ts';
export type { ToolgateSearchAttribute } from './search-attributes.ts';
export { toolgateSearchAttributes } from './search-attributes.ts';
