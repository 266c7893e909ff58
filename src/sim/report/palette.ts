/**
 * Colours of the report: the Tableau 10 categorical palette (designed to stay distinguishable
 * with the common colour-vision deficiencies), cycled, plus dash patterns so that more than ten
 * workers remain told apart.
 *
 * @module
 * @internal
 */

/** @internal Tableau 10, in its canonical order. */
export const PALETTE: readonly string[] = Object.freeze([
  '#4e79a7',
  '#f28e2b',
  '#e15759',
  '#76b7b2',
  '#59a14f',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac',
]);

/** @internal The colour of category `index`, cycling through {@link PALETTE}. */
export function categoryColor(index: number): string {
  const n = PALETTE.length;
  return PALETTE[((index % n) + n) % n]!;
}

const DASHES: readonly (string | undefined)[] = [undefined, '5 3', '1.5 2.5', '8 3 2 3'];

/** @internal How worker `index` is stroked: the same in every panel of the report. */
export interface WorkerStroke {
  readonly color: string;
  /** An SVG `stroke-dasharray`, or `undefined` for a solid line. */
  readonly dash: string | undefined;
}

/**
 * @internal Worker `index`'s stroke: colours cycle through {@link PALETTE}, and each further
 * round of ten workers gets the next dash pattern (solid, dashed, dotted, dash-dot).
 */
export function workerStroke(index: number): WorkerStroke {
  const round = Math.floor(index / PALETTE.length);
  return { color: categoryColor(index), dash: DASHES[round % DASHES.length] };
}
