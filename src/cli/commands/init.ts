import type { Command } from 'commander';

export function addInitCommand(program: Command): void {
  program
    .command('init [folder]')
    .description('Create a working toolgate project: a config, one contract, its implementation and a test.')
    .option(
      '--package <spec>',
      'how package.json names toolgate: a version range, a tarball or a git URL (default: this version)',
    )
    .option('--json', 'print what was created as one JSON document')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  $ toolgate init my-tools          # a new folder',
        '  $ toolgate init                   # this folder, if it holds none of the files',
        '',
        'It writes package.json, tsconfig.json, .gitignore, toolgate.config.ts, src/contracts.ts,',
        'src/tools.ts, src/workflows.ts and test/tools.test.ts, and refuses to overwrite any file',
        'that exists. The project runs on Node.js >= 22.18, which loads TypeScript by erasing types.',
      ].join('\n'),
    )
    .action(async (folder: string | undefined, options: { package?: string; json?: boolean }) => {
      const { initProject } = await import('../init-project.ts');
      const created = await initProject(folder ?? '.', options.package);
      if (options.json) {
        process.stdout.write(`${JSON.stringify(created, null, 2)}\n`);
        return;
      }
      const into = created.relative === '.' ? '' : `cd ${created.relative} && `;
      process.stdout.write(
        [
          `Created a toolgate project in ${created.directory}:`,
          ...created.files.map((file) => `  ${file}`),
          '',
          'Next:',
          `  ${into}npm install && npm test`,
          '  npm start                 # a local Temporal dev server and a worker for your tools',
          '',
          'Then, in another terminal:',
          `  npx toolgate call add_note --input '{"id":"n1","text":"hello"}'`,
          '',
        ].join('\n'),
      );
    });
}
