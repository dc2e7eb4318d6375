/**
 * How an import's rows update the rows their `external_id` names (docs/catalogue.md#merge):
 * `replace`, each row is the whole row (the default); `merge`, each row changes only the fields it
 * carries. The wire's `update` parameter, and the one name for the choice from the route to the
 * worker. note: the job data and the imports table keep their `merge` flag (a rolling deploy's
 * workers read it); it is derived from this at those two edges (isMerge).
 */
export const UPDATE_MODES = ['replace', 'merge'] as const;
export type UpdateMode = (typeof UPDATE_MODES)[number];

/** The `merge` flag of the job data and of the imports table. */
export function isMerge(update: UpdateMode): boolean {
  return update === 'merge';
}
