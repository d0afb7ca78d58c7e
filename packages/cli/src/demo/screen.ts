import { MIN_VIEW } from './frame.js';

/** Enter the alternate screen (no scrollback: redraws leave nothing behind) and hide the cursor. */
const ENTER = '\x1b[?1049h\x1b[?25l';
/** Show the cursor and return to the normal screen, as it was before. */
const LEAVE = '\x1b[?25h\x1b[?1049l';

/**
 * Where the demo draws: on a terminal (not TERM=dumb) at least MIN_VIEW
 * large, frames on the alternate screen, each drawn from the top-left corner
 * over the last; otherwise plain lines on stdout. The size is read at every
 * draw, so a resize is followed (below MIN_VIEW it returns to plain lines).
 */
export class DemoScreen {
  readonly tty = process.stdout.isTTY === true && process.env.TERM !== 'dumb';
  private alternate = false;

  get columns(): number {
    return process.stdout.columns ?? 0;
  }

  get rows(): number {
    return process.stdout.rows ?? 0;
  }

  /** Whether frames are drawn now. */
  fits(): boolean {
    return this.tty && this.columns >= MIN_VIEW.columns && this.rows >= MIN_VIEW.rows;
  }

  /** Draws `frame` (lines already fitted) over the last one; returns false, drawing nothing, when the screen does not fit. */
  draw(frame: readonly string[]): boolean {
    if (!this.fits()) {
      this.leave();
      return false;
    }
    if (!this.alternate) process.stdout.write(ENTER);
    this.alternate = true;
    // Home, each line cleared to its end, then everything below the frame.
    process.stdout.write(`\x1b[H${frame.map((l) => `${l}\x1b[K`).join('\n')}\n\x1b[J`);
    return true;
  }

  /** A plain line on stdout (on the normal screen). */
  line(text: string): void {
    this.leave();
    process.stdout.write(text + '\n');
  }

  /** Back to the normal screen, where the summary goes. Idempotent. */
  leave(): void {
    if (!this.alternate) return;
    this.alternate = false;
    process.stdout.write(LEAVE);
  }
}
