import type { Command } from 'commander';
import type { startInbox } from '../../inbox/inbox-app.ts';
import type { ConnectionFlags } from '../endpoint.ts';
import { type ConfigFlags, parsePort, withConnectionOptions } from '../options.ts';

export function addInboxCommand(program: Command): void {
  withConnectionOptions(
    program
      .command('inbox')
      .description('Serve the approvals inbox web page and its JSON API (127.0.0.1 by default).')
      .option(
        '--host <host>',
        'interface to bind; keep 127.0.0.1 unless a proxy with TLS is in front',
        '127.0.0.1',
      )
      .option(
        '--port <port>',
        'port, 0 to 65535 (0 picks a free one); checked before anything is created',
        '8787',
      ),
  )
    .addHelpText(
      'after',
      '\nExamples:\n  $ toolgate inbox\n  $ toolgate inbox --port 9000 --data-dir /var/lib/toolgate\n\nApprovers sign in with a token from <data-dir>/approvers.json; on first run one is created for alice and printed once.\n',
    )
    .action(
      async (options: ConnectionFlags & ConfigFlags & { host: string; port: string; json?: boolean }) => {
        // Checked before anything connects or is created: a failed start must not leave behind an
        // approvers file whose one-time token nobody saw.
        const port = parsePort(options.port, '--port', { allowZero: true });
        const [
          { loadCommandConfig },
          { openSession },
          { loadOrCreateApproverDirectory },
          { startInbox },
          { runUntilStopped },
        ] = await Promise.all([
          import('../command-config.ts'),
          import('../endpoint.ts'),
          import('../../inbox/approver-tokens.ts'),
          import('../../inbox/inbox-app.ts'),
          import('../stop-signals.ts'),
        ]);
        const config = await loadCommandConfig(options);
        return runUntilStopped({
          what: 'the inbox',
          start: async (signal) => {
            // The session's client carries the approval signer: the inbox signs as the signed-in approver.
            const session = await openSession(options, { config, signer: true });
            try {
              signal.throwIfAborted();
              const { directory, created, discard } = await loadOrCreateApproverDirectory(
                session.endpoint.dataDir,
              );
              let inbox: Awaited<ReturnType<typeof startInbox>>;
              try {
                inbox = await startInbox({
                  operations: session.operations,
                  approvers: directory,
                  host: options.host,
                  port,
                });
              } catch (error) {
                // The token of a file this start created was never shown: remove the file, so the
                // next start creates one and shows its token.
                await discard?.();
                const message = error instanceof Error ? error.message : String(error);
                throw new Error(
                  `The inbox cannot listen on ${options.host}:${port}: ${message}.${discard ? ` ${directory.file}, which this start had created, was removed; the next start creates it again and shows its token.` : ''}`,
                  { cause: error },
                );
              }
              return { session, inbox, directory, created };
            } catch (error) {
              await session.close();
              throw error;
            }
          },
          started: ({ inbox, directory, created }) => {
            if (options.json) {
              process.stdout.write(
                `${JSON.stringify({ url: inbox.url, approversFile: directory.file, ...(created ? { created } : {}) })}\n`,
              );
              return;
            }
            process.stdout.write(
              [
                `Approvals inbox: ${inbox.url}`,
                `  Approver tokens: ${directory.file}`,
                ...(created
                  ? [`  Created an approver for ${created.name}; sign in with token ${created.token}`]
                  : []),
                '  Press Ctrl-C to stop.',
                '',
              ].join('\n'),
            );
          },
          // The inbox serves until it is stopped.
          running: () => new Promise<void>(() => undefined),
          stop: async ({ inbox, session }) => {
            await inbox.close();
            await session.close();
          },
        });
      },
    );
}
