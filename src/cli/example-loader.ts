/**
 * The one module of the product that imports from `examples/` (biome.json names it as the single
 * exception to the fence that keeps examples out of product code): the CLI serves the bundled
 * example tools. Every command gets its tools from here, so replacing this loader with one that
 * reads the user's configuration changes what every command serves at once.
 */
import { exampleToolSet } from '../../examples/tool-set.ts';
import type { EmbeddedToolSet } from '../dev/embedded.ts';

/** The tools the CLI's commands serve, call and check: today, the bundled examples. */
export async function loadCliToolSet(): Promise<EmbeddedToolSet> {
  return exampleToolSet;
}
