/**
 * How toolgate compares the names of people and agents (docs/design.md "Approval"): after Unicode
 * compatibility normalisation (NFKC) and case folding, so that `Alice`, `ALICE` and the full-width
 * `ａｌｉｃｅ` are one identity. Without it a requester could approve their own call under another
 * spelling. Case folding here is upper-then-lower, which folds what lower-casing alone misses
 * (`ß` and `ss`, the long `ſ` and `s`, the final `ς` and `σ`), then NFKC again, since folding can
 * undo a normal form. Pure: it runs in activities, the inbox and the CLI alike.
 */
export function identityKey(name: string): string {
  return name.normalize('NFKC').toUpperCase().toLowerCase().normalize('NFKC');
}

export function sameIdentity(left: string, right: string): boolean {
  return identityKey(left) === identityKey(right);
}

/**
 * Why `approver` (with `roles`) may not decide a call `requester` made, whose approvers are
 * `approvers` (names, or `role:<name>`); undefined when they may.
 */
export function approverRefusal(options: {
  readonly approver: string;
  readonly roles: readonly string[];
  readonly requester: string;
  readonly approvers: readonly string[];
  /** Named in the refusal; default "this tool". */
  readonly tool?: string;
}): string | undefined {
  if (sameIdentity(options.approver, options.requester))
    return 'the requester may not approve their own call';
  const listed = new Set(options.approvers.map(identityKey));
  const named = listed.has(identityKey(options.approver));
  const byRole = options.roles.some((role) => listed.has(identityKey(`role:${role}`)));
  return named || byRole
    ? undefined
    : `${options.approver} is not an approver for ${options.tool ?? 'this tool'}`;
}
