import { namePattern } from '../contracts/call-id.ts';
import type { CallContext } from '../contracts/call-record.ts';
import { ToolgateUsageError } from './errors.ts';

/**
 * Throws ToolgateUsageError for a call context no call can run under. `named` says how a problem
 * names the field: `context.tenant` for the library, the flag and its value for the CLI.
 */
export function checkContext(
  context: CallContext,
  named: (field: keyof CallContext) => string = (field) => `context.${field}`,
): void {
  if (!namePattern.test(context.tenant)) {
    throw new ToolgateUsageError(
      `${named('tenant')} must be 1-64 letters, digits, _ . or -, starting with a letter or digit.`,
    );
  }
  if (
    typeof context.principal !== 'string' ||
    context.principal.length === 0 ||
    context.principal.length > 128
  ) {
    throw new ToolgateUsageError(
      `${named('principal')} must be a non-empty string of at most 128 characters.`,
    );
  }
  if (!['human', 'agent', 'service'].includes(context.principalKind)) {
    throw new ToolgateUsageError(`${named('principalKind')} must be 'human', 'agent' or 'service'.`);
  }
}
