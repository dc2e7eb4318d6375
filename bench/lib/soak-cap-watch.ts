/**
 * Follows, per account, the answers its clients got, to find the stretches when the account
 * was fully capped: every answer a 429 "Too many concurrent requests", none served. A stretch
 * runs from the first such 429 to the next answer of any other kind (or to the end of the
 * load). A slot that leaks is never given back, so an account that leaks as many as its cap
 * stays capped for good; one that only runs into its cap now and then is refused between
 * answers, for about a second at a time.
 */
export class CapWatch {
  private readonly accounts: {
    /** start of the current fully capped stretch, ms */
    cappedSince: number | undefined;
    longestMs: number;
    longestFromMs: number | undefined;
    /** per bucket of `bucketMs`: [capped answers, other answers] */
    timeline: [number, number][];
  }[];

  constructor(
    accounts: number,
    private readonly bucketMs: number,
  ) {
    this.accounts = Array.from({ length: accounts }, () => ({ cappedSince: undefined, longestMs: 0, longestFromMs: undefined, timeline: [] }));
  }

  /** An answer to one of the account's requests at `atMs` (a hang-up or a lost connection is none). */
  record(account: number, atMs: number, capped: boolean): void {
    const state = this.accounts[account]!;
    const bucket = Math.floor(atMs / this.bucketMs);
    while (state.timeline.length <= bucket) state.timeline.push([0, 0]);
    state.timeline[bucket]![capped ? 0 : 1] += 1;
    if (capped) {
      state.cappedSince ??= atMs;
      return;
    }
    if (state.cappedSince !== undefined) this.close(account, atMs);
  }

  /** Ends every stretch still open at `atMs`, as the load ends. */
  finish(atMs: number): void {
    for (let account = 0; account < this.accounts.length; account += 1) {
      if (this.accounts[account]!.cappedSince !== undefined) this.close(account, atMs);
    }
  }

  private close(account: number, atMs: number): void {
    const state = this.accounts[account]!;
    const length = atMs - state.cappedSince!;
    if (length > state.longestMs) {
      state.longestMs = length;
      state.longestFromMs = state.cappedSince;
    }
    state.cappedSince = undefined;
  }

  /** The account's longest fully capped stretch and when it began (ms after the start), and its timeline. */
  report(account: number): { longestMs: number; longestFromMs: number | undefined; timeline: [number, number][] } {
    const { longestMs, longestFromMs, timeline } = this.accounts[account]!;
    return { longestMs, longestFromMs, timeline };
  }
}
