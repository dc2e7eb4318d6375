/** A reply that came back, whatever its status. */
export interface AttemptResponse {
  type: 'response';
  status: number;
  /** the body parsed as JSON, or its text when it is not JSON (a proxy's page); undefined when `tooLarge` */
  body: unknown;
  headers: Headers;
  /** when the request was sent (Date.now), for pacing by the rate-limit headers */
  sentAt: number;
  /** the body passed the reply limit (MAX_REPLY_BYTES) and was abandoned unread */
  tooLarge: boolean;
  /** an answer streamed to its reader (sendStreamAttempt's 200): its body, unread; `body` is then undefined */
  stream?: ReadableStream<Uint8Array>;
}

/**
 * No HTTP reply. `delivered: false` when the connection was never made (refused, DNS), so the
 * server cannot have seen the request; otherwise it may have, and the outcome is unknown.
 */
export interface AttemptNetworkFailure {
  type: 'network';
  delivered: boolean;
  message: string;
}

/** What one HTTP attempt came back with; an attempt never throws. */
export type AttemptResult = AttemptResponse | AttemptNetworkFailure;
