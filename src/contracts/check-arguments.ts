import { checkInput, type ToolContract } from './define-tool.ts';
import { reasonCodes } from './reason-codes.ts';

/**
 * The validation gate's verdict on a call's arguments: the parsed input, or the explanation the
 * model gets. Pure code, used by the workflow (protocols 1 and 2) and by the activities that record
 * the verdict in history (protocol 3, see `recordedValidationProtocol`).
 */
export type ArgumentCheck =
  | { readonly ok: true; readonly data: unknown }
  | {
      readonly ok: false;
      /** For the model: which arguments are wrong and what to do. */
      readonly message: string;
      /** Set when the schema itself threw: for the operator log, never for the model. */
      readonly schemaError?: string;
    };

/** What the gates read of a zod issue. */
interface Issue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

/**
 * Validates arguments against a contract's schema and never throws. A schema that throws (a
 * refinement with a bug, a lazy schema that fails to build) is a refusal whose message tells the
 * model only the error's kind; `schemaError` carries the rest for the operator.
 */
export function checkArguments(contract: ToolContract, input: unknown): ArgumentCheck {
  const checked = checkInput(contract, input);
  if (checked.success) return { ok: true, data: checked.data };
  if (!('thrown' in checked)) return { ok: false, message: describeIssues(checked.error.issues) };
  const error = checked.thrown;
  const kind = error instanceof Error ? error.name.slice(0, 64) : typeof error;
  return {
    ok: false,
    message: describeIssues([
      { path: [], message: `the tool's schema failed while checking them (${kind}); tell the tool's owner` },
    ]),
    schemaError: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  };
}

/** The longest one issue may be in the model's message; zod lists every unknown key in one issue. */
const maximumIssueChars = 200;

/**
 * At most five issues, each as `path: message` cut to 200 characters, then what to do next. Without
 * the cut, 20,000 unknown keys made a message of over 300,000 characters for the model and the record.
 */
export function describeIssues(issues: readonly Issue[]): string {
  const lines = issues.slice(0, 5).map((issue) => {
    const path = issue.path.map((part) => String(part)).join('.');
    const message = issue.message.replace(/\.$/, '');
    const line = path ? `${path}: ${message}` : message;
    return line.length > maximumIssueChars ? `${line.slice(0, maximumIssueChars - 1)}…` : line;
  });
  const more = issues.length > 5 ? ` (and ${issues.length - 5} more)` : '';
  return `Invalid arguments: ${lines.join('; ')}${more}. ${reasonCodes.INVALID_INPUT.nextStep}`;
}

/** The approver's preview of validated input; a preview function that throws gets a placeholder. */
/**
 * What the contract's `approval.when` says of these validated arguments: false when they need no
 * human, true when they do (also when the function throws), undefined without a condition.
 */
export function approvalRequiredOf(contract: ToolContract, input: unknown): boolean | undefined {
  const when = contract.approval?.when;
  if (!when) return undefined;
  try {
    return when(input as never) !== false;
  } catch {
    return true;
  }
}

export function previewOf(contract: ToolContract, input: unknown): string | undefined {
  const preview = contract.approval?.preview;
  if (!preview) return undefined;
  try {
    return String(preview(input as never)).slice(0, 4000);
  } catch {
    return '(no preview: the preview function failed)';
  }
}
