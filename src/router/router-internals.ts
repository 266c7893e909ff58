/**
 * Privileged access to a router's parts, for the simulator only.
 *
 * @module
 * @internal
 */
import type { AdmissionGate } from './admission-gate.js';

/**
 * @internal Privileged access to a router's parts for the simulator, which drives admission on
 * simulated time (its deadlines). Not part of the public API.
 */
export const routerInternals: {
  /** A `Router`'s admission gate, `undefined` when admission is off. O(1). */
  admission(router: object): AdmissionGate | undefined;
} = {
  // Filled in by the class's static block, which alone can reach the private field.
  admission: () => {
    throw new Error('routerInternals used before the Router class was defined');
  },
};
