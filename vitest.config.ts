import { defineConfig } from 'vitest/config';

// Four projects: `unit` never talks to a server; `integration` and `faults` share one real
// Temporal dev server started by the global setup; `cluster` runs the compose stack.
// Integration tests provoke hundreds of tool failures on purpose; their worker logs are silenced
// unless TOOLGATE_LOG_LEVEL asks for them (e.g. TOOLGATE_LOG_LEVEL=WARN npm test).
process.env['TOOLGATE_LOG_LEVEL'] ??= 'OFF';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/support/build-setup.ts'],
          // Some unit tests spawn the bench's CLIs or replay recorded histories: a second or two
          // each here, several times that on a loaded CI machine. Vitest's default of 5 s made one
          // of them time out there; a timeout is a hang detector, never a speed check.
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/support/build-setup.ts', 'test/support/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 600_000,
          // Three files at a time, each on its own task queue: most of their time is spent waiting
          // for the server and for timers, so this takes the project from about 4.6 to 2.2 minutes
          // on two cores. Fault files run one at a time: they kill and starve processes.
          maxWorkers: 3,
        },
      },
      {
        test: {
          name: 'faults',
          include: ['test/faults/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/support/build-setup.ts', 'test/support/global-setup.ts'],
          testTimeout: 300_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
      {
        // `npm run test:cluster`: what docker-compose.yml describes, as real processes
        // (test/support/cluster-stack.ts). Not part of `npm test`: it builds the server once.
        test: {
          name: 'cluster',
          include: ['test/cluster/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/support/build-setup.ts', 'test/support/cluster-setup.ts'],
          testTimeout: 300_000,
          hookTimeout: 900_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
