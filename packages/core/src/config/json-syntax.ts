/**
 * Where and why a text is not JSON, without any of the text: a configuration
 * file may hold a password right at the fault, and the runtime's own parse
 * error quotes the characters around it.
 */
export interface JsonSyntaxProblem {
  /** 1-based line of the fault. */
  line: number;
  /** 1-based column (UTF-16 code units) of the fault. */
  column: number;
  /** What was wrong, in words that name no character of the text. */
  reason: string;
}

/** Depth beyond which a text is refused rather than scanned (as JSON.parse's own stack would). */
const MAX_DEPTH = 512;

class Fault extends Error {
  constructor(
    readonly at: number,
    readonly reason: string,
  ) {
    super(reason);
  }
}

/** The first syntax fault of `text` as JSON, or undefined when it parses. */
export function jsonSyntaxProblem(text: string): JsonSyntaxProblem | undefined {
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const expectValue = (depth: number): void => {
    ws();
    if (i >= text.length) throw new Fault(i, 'the text ends where a value was expected');
    if (depth > MAX_DEPTH) throw new Fault(i, `nested deeper than ${MAX_DEPTH} levels`);
    const c = text[i]!;
    if (c === '{') return object(depth);
    if (c === '[') return array(depth);
    if (c === '"') return string();
    if (c === '-' || (c >= '0' && c <= '9')) return number();
    for (const word of ['true', 'false', 'null']) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return;
      }
    }
    throw new Fault(i, 'expected a value (an object, array, string, number, true, false or null)');
  };
  const object = (depth: number): void => {
    i++;
    ws();
    if (text[i] === '}') return void i++;
    for (;;) {
      ws();
      if (text[i] !== '"') throw new Fault(i, i >= text.length ? 'the text ends inside an object' : 'expected a property name in double quotes');
      string();
      ws();
      if (text[i] !== ':') throw new Fault(i, "expected ':' after a property name");
      i++;
      expectValue(depth + 1);
      ws();
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text[i] === '}') return void i++;
      throw new Fault(i, i >= text.length ? 'the text ends inside an object' : "expected ',' or '}' after a property value");
    }
  };
  const array = (depth: number): void => {
    i++;
    ws();
    if (text[i] === ']') return void i++;
    for (;;) {
      expectValue(depth + 1);
      ws();
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text[i] === ']') return void i++;
      throw new Fault(i, i >= text.length ? 'the text ends inside an array' : "expected ',' or ']' after an array element");
    }
  };
  const string = (): void => {
    const start = i++;
    for (;;) {
      if (i >= text.length) throw new Fault(start, 'a string is not terminated');
      const c = text[i]!;
      if (c === '"') return void i++;
      if (c < ' ') throw new Fault(i, 'a control character (a raw newline or tab) inside a string');
      if (c === '\\') {
        const e = text[i + 1];
        if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6;
        else throw new Fault(i, 'a bad escape sequence inside a string');
        continue;
      }
      i++;
    }
  };
  const number = (): void => {
    const match = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i, i + 400));
    if (!match || match[0] === '-' || match[0] === '') throw new Fault(i, 'a malformed number');
    i += match[0].length;
    if (i < text.length && /[0-9.eE+-]/.test(text[i]!)) throw new Fault(i, 'a malformed number');
  };
  try {
    expectValue(0);
    ws();
    if (i < text.length) throw new Fault(i, 'more text after the JSON value');
    return undefined;
  } catch (err) {
    if (!(err instanceof Fault)) throw err;
    const before = text.slice(0, err.at);
    const line = before.split('\n').length;
    return { line, column: err.at - before.lastIndexOf('\n'), reason: err.reason };
  }
}
