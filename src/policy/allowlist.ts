/**
 * The allowlist: deny by default. A tool runs only when it is listed for everyone or for the calling
 * tenant. Names match exactly; there are no wildcards, because a model invents names.
 */
export interface AllowlistPolicy {
  readonly allow: readonly string[];
  readonly tenants?: Readonly<Record<string, readonly string[]>>;
}

export function isToolAllowed(policy: AllowlistPolicy, tool: string, tenant: string): boolean {
  if (policy.allow.includes(tool)) return true;
  const forTenant =
    policy.tenants && Object.hasOwn(policy.tenants, tenant) ? policy.tenants[tenant] : undefined;
  return forTenant?.includes(tool) ?? false;
}
