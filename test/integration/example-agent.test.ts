import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('npm run example:agent', () => {
  it('finishes after a worker crash and an approval, with the approval-tier call run exactly once', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'examples/agent/run-example-agent.ts'], {
      cwd: root,
      // The shared test server, so the example does not start a second one.
      env: { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress'), ANTHROPIC_API_KEY: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exitCode = await new Promise<number | null>((resolve) =>
      child.once('exit', (code) => resolve(code)),
    );
    expect(output).toMatch(/Crashing worker 1 with SIGKILL \(pid (\d+)\)/);
    expect(output).toContain('Approval by alice: accepted');
    expect(output).toMatch(/user: \[tool_result\] \{"transferred":true/);
    expect(output).toMatch(/ledger entries for INV-\w+: 1; transfer runs: 1\./);
    expect(exitCode, output).toBe(0);
  }, 120_000);
});
