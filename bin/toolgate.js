#!/usr/bin/env node
// Loads the TypeScript CLI through tsx in this same process, so signals reach it directly and the
// package runs from source without a build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/run.ts');
