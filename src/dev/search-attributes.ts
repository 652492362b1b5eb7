import { searchAttributeNames } from '../contracts/search-attributes.ts';

/** One custom search attribute as the Temporal CLI names its type. */
export interface ToolgateSearchAttribute {
  readonly name: string;
  readonly type: 'Keyword';
}

/**
 * The custom search attributes the dev server must know, derived from the keys the workflow
 * upserts so the two lists can never drift apart. All are Keyword (exact-match filters).
 */
export const toolgateSearchAttributes: readonly ToolgateSearchAttribute[] = searchAttributeNames.map(
  (name) => ({
    name,
    type: 'Keyword',
  }),
);
