#!/usr/bin/env node
// The toolgate command runs the compiled CLI from dist/ in this same process, so signals reach it
// directly. A checkout builds dist/ with `npm run build` (npm ci and npm install run it too).
import { existsSync } from 'node:fs';

const entry = new URL('../dist/src/cli/run.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write(
    'toolgate: the compiled CLI (dist/src/cli/run.js) is missing. In a checkout, run `npm run build` (npm ci runs it too).\n',
  );
  process.exit(1);
}
await import(entry.href);
