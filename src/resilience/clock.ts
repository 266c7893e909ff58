/**
 * The time source every state machine reads, so tests can drive time by hand.
 *
 * @module
 */

/**
 * Returns a monotonic time in milliseconds. Only differences between two readings matter.
 *
 * @public
 */
export type Clock = () => number;

/** The default clock: `performance.now()`, monotonic and unaffected by wall-clock changes. @public */
export const monotonicClock: Clock = () => performance.now();
