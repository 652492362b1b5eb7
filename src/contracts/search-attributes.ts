import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * toolgate's custom search attributes. Every call upserts them on each transition, so operators can
 * list calls with visibility queries and see them in the Temporal Web UI. All are Keyword: SQLite
 * dev servers offer ten Keyword slots and toolgate uses seven.
 */
export const searchAttributeKeys = {
  toolName: defineSearchAttributeKey('ToolName', SearchAttributeType.KEYWORD),
  toolTier: defineSearchAttributeKey('ToolTier', SearchAttributeType.KEYWORD),
  callStatus: defineSearchAttributeKey('CallStatus', SearchAttributeType.KEYWORD),
  callEffect: defineSearchAttributeKey('CallEffect', SearchAttributeType.KEYWORD),
  tenant: defineSearchAttributeKey('Tenant', SearchAttributeType.KEYWORD),
  principal: defineSearchAttributeKey('Principal', SearchAttributeType.KEYWORD),
  reasonCode: defineSearchAttributeKey('ReasonCode', SearchAttributeType.KEYWORD),
} as const;

export const searchAttributeNames: readonly string[] = Object.values(searchAttributeKeys).map(
  (key) => key.name,
);
