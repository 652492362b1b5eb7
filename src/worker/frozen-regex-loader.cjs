'use strict';
/**
 * A webpack loader for zod's files in the workflow bundle (see shared-libraries.ts).
 *
 * Once zod is shared between workflows, the SDK deep-freezes it, and with it the regular
 * expressions zod keeps for its built-in formats (email, uuid, ISO dates, URLs...). zod resets
 * `pattern.lastIndex = 0` before every test, and a write to a frozen RegExp throws. The reset only
 * matters for a global or sticky pattern (the only kind whose `test` reads `lastIndex`), so each
 * reset is rewritten to happen only then: the same behaviour for every pattern, and no write to a
 * frozen one (built-in formats are neither global nor sticky).
 *
 * Any other write to `lastIndex` in a zod file fails the bundle, so a zod upgrade that adds a new
 * kind of reset is caught when the worker starts rather than in the first call that uses it.
 */

/** `a.b.lastIndex = 0;` */
const plainReset = /([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\.lastIndex = 0;/g;
/** `${name}.lastIndex = 0;` inside a template literal (code zod generates). */
const templateReset = /\$\{([A-Za-z_$][\w$]*)\}\.lastIndex = 0;/g;

/** Any assignment (`=`, `+=`, `||=`...) or increment of a `lastIndex`. */
const lastIndexWrite =
  /\.lastIndex\s*(?:[-+*/%&|^]|<<|>>>?|\*\*|&&|\|\||\?\?)?=(?!=)|\.lastIndex\s*(?:\+\+|--)|(?:\+\+|--)\s*[\w$.]+\.lastIndex/;

/**
 * Returns the rewritten source and how many resets were rewritten; throws when a write to
 * `lastIndex` is left that this loader does not understand.
 */
function guardLastIndexResets(source) {
  let rewritten = 0;
  let output = source.replace(templateReset, (_match, name) => {
    rewritten++;
    return `{ if (\${${name}}.global || \${${name}}.sticky) \${${name}}.lastIndex = 0; }`;
  });
  // A rewritten template reads `${name}.lastIndex`: no identifier before the dot, so no match here.
  output = output.replace(plainReset, (_match, target) => {
    rewritten++;
    return `{ if (${target}.global || ${target}.sticky) ${target}.lastIndex = 0; }`;
  });
  const unguarded = output
    .split('\n')
    .filter((line) => lastIndexWrite.test(line) && !line.includes('.sticky)'));
  if (unguarded.length > 0) {
    throw new Error(
      `toolgate cannot share this zod version between workflows: it writes lastIndex in a way the ` +
        `frozen-regex loader does not know (${unguarded[0].trim().slice(0, 120)}). ` +
        'Pin the zod version in package.json, or create the worker with shareLibraries: false.',
    );
  }
  return { source: output, rewritten };
}

module.exports = function frozenRegexLoader(source) {
  try {
    return guardLastIndexResets(source).source;
  } catch (error) {
    this.emitError(error);
    return source;
  }
};
module.exports.guardLastIndexResets = guardLastIndexResets;
