// Resubscribing watch loops. Every stream of the API can end at any time (server restart,
// a table moving between instances, a proxy timeout, a network blip); a client keeps its
// screen alive by calling again. How to call again is per stream: WatchTable resumes from
// the last `sequence` processed (no gap, no repeat); WatchMyTables and WatchCasinoTable
// send the whole state in every message, so calling again with the same request is enough.

import { Code, ConnectError } from "@connectrpc/connect";
import { fail, info } from "./ui";
import { signalUnauthenticated } from "./api";

export interface WatchOptions<T> {
  /** Label for the status line. */
  name: string;
  /** Opens one stream; called again after each end (read your cursor in here). */
  open: (signal: AbortSignal) => AsyncIterable<T>;
  /** Applies one message. */
  onMessage: (msg: T) => void;
  /**
   * After a stream ended without error: return false to stop (e.g. the tournament is over),
   * true to call again. Default: call again.
   */
  onEnd?: (messagesSeen: number) => boolean | Promise<boolean>;
  /** After an error: return false to stop (a final error such as NOT_FOUND). */
  onError?: (err: ConnectError) => boolean;
}

/** A running watch: stop() cancels the stream in flight and ends the loop. */
export interface Watch {
  stop(): void;
}

const MIN_DELAY_MS = 250;
const MAX_DELAY_MS = 10_000;

/**
 * Runs `open` in a loop with exponential backoff (250 ms doubling to 10 s, with jitter so a
 * restarted server is not hit by every browser at once). The delay resets once a stream
 * delivered a message: a long healthy stream that ends is resumed at once.
 */
export function watch<T>(opts: WatchOptions<T>): Watch {
  const abort = new AbortController();
  void (async () => {
    let delay = MIN_DELAY_MS;
    let reconnecting = false;
    while (!abort.signal.aborted) {
      let seen = 0;
      try {
        for await (const msg of opts.open(abort.signal)) {
          seen++;
          delay = MIN_DELAY_MS;
          if (reconnecting) {
            reconnecting = false;
            info(`${opts.name}: reconnected`);
          }
          opts.onMessage(msg);
        }
        if (abort.signal.aborted) return;
        if (opts.onEnd && !(await opts.onEnd(seen))) return;
        if (seen > 0) continue; // a normal end after progress: resume at once
      } catch (err) {
        if (abort.signal.aborted) return;
        const e = ConnectError.from(err);
        if (e.code === Code.Unauthenticated) {
          fail(opts.name, e);
          signalUnauthenticated(); // the token expired mid-stream: sign-in takes over
          return;
        }
        if (opts.onError && !opts.onError(e)) return;
        fail(`${opts.name} (reconnecting)`, e);
      }
      await sleep(delay * (0.75 + Math.random() * 0.5), abort.signal);
      delay = Math.min(delay * 2, MAX_DELAY_MS);
      if (!abort.signal.aborted && (seen === 0 || reconnecting)) {
        reconnecting = true;
        info(`${opts.name}: reconnecting…`);
      }
    }
  })();
  return { stop: () => abort.abort() };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
  });
}
