/**
 * Text from records is someone else's: a holder identity, a payload, a message
 * may carry control characters that a terminal would obey (colour, cursor
 * moves, a cleared screen, a window title) or bidirectional overrides that
 * make it read as something else. Everything the CLI prints from a record goes
 * through these, as visible escapes.
 */
const UNSAFE_TEXT = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** Like UNSAFE_TEXT, less what JSON.stringify escapes already (C0). */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const escape = (c: string) => {
  const code = c.charCodeAt(0);
  if (c === '\n') return '\\n';
  if (c === '\t') return '\\t';
  if (c === '\r') return '\\r';
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
};

/** `text` with every control character and bidi override shown as an escape (`\x1b`, `\n`, `\u202e`). */
export function printable(text: string): string {
  return text.replace(UNSAFE_TEXT, escape);
}

/** `JSON.stringify(value, …)`, with the characters JSON leaves raw that a terminal obeys escaped as `\uXXXX` (still valid JSON). */
export function printableJson(value: unknown, space?: number): string {
  return JSON.stringify(value, null, space).replace(UNSAFE_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
