/**
 * What the catalogue check found, over every catalogue account. Each problem is a line naming
 * the account, the row (its `external_id`) or the request, and what differed.
 */
export interface CatalogueFindings {
  /**
   * rows the table holds archived or not at all where the model says they must be there (active,
   * or archived rather than deleted), left out by a mirror whose removal was done since they
   * were last written: a mirror took what it should have kept
   */
  wrongRemovals: string[];
  /** the same, of rows no mirror had left out since they were last written */
  lost: string[];
  /** rows the model says an archive, a delete or a mirror removed, that the table holds (still active, or archived rather than deleted) */
  notRemoved: string[];
  /** `external_id`s the account holds more than once */
  duplicated: string[];
  /** rows whose price is not the one last written */
  wrongContent: string[];
  /** rows of the account that no request of the soak named */
  unknown: string[];
  /** answers whose counts are not the model's (an archive that archived another number of rows…) */
  wrongAnswers: string[];
  /** mirrors whose import differs from the model: its file's counts, its removal's state or rows, its guard's base; or an import kept twice, or none for a 202 */
  wrongMirrors: string[];
  /** rows left out of the comparisons from some point on, because what happened to them cannot be known, and why */
  ambiguous: Map<string, string>;
  /** rows the model expected a mirror to remove, removed by it (as its import says) */
  removedByMirrors: number;
  /** rows a mirror left out that stayed because a write sent while its file arrived wrote them (decisions K.6), with that mirror */
  keptByWritesDuringUpload: { account: string; id: string; mirror: string }[];
  /** rows a mirror left out and removed although an upsert or merge that changed nothing was sent while its file arrived */
  removedAfterUnchangedResend: number;
  /** each mirror: its mode, what it meant to do, and how its removal ended (`none`: no import was kept) */
  mirrors: { account: string; missing: 'archive' | 'delete'; meant: 'done' | 'held'; state: string; rows: number }[];
}

export function newFindings(): CatalogueFindings {
  return {
    wrongRemovals: [],
    lost: [],
    notRemoved: [],
    duplicated: [],
    wrongContent: [],
    unknown: [],
    wrongAnswers: [],
    wrongMirrors: [],
    ambiguous: new Map(),
    removedByMirrors: 0,
    keptByWritesDuringUpload: [],
    removedAfterUnchangedResend: 0,
    mirrors: [],
  };
}

/** The findings that fail the soak, with what each means. */
export const CATALOGUE_PROBLEMS = {
  wrongRemovals: 'rows a mirror removed that it had to keep',
  lost: 'rows missing (or archived) that nothing removed',
  notRemoved: 'rows still there (or active) that an archive, a delete or a mirror removed',
  duplicated: 'external_ids held more than once',
  wrongContent: 'rows whose price is not the one last written',
  unknown: 'rows no request of the soak named',
  wrongAnswers: 'answers whose counts are not the model\'s',
  wrongMirrors: 'mirrors whose import is not the model\'s',
} as const satisfies Partial<Record<keyof CatalogueFindings, string>>;
export type CatalogueProblem = keyof typeof CATALOGUE_PROBLEMS;
