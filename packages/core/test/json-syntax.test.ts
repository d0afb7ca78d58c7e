import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonSyntaxProblem } from '../src/config/json-syntax.js';
import { ConfigurationError, fileLayer } from '../src/index.js';

// A seeded xorshift, so a failure names the case that made it.
function random(seed: number): () => number {
  let x = seed || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

const SECRET = 'hunter2-do-not-print';

describe('jsonSyntaxProblem', () => {
  it.each([
    ['{"a": 1,}', 1, 9, 'expected a property name in double quotes'],
    ['{"a" 1}', 1, 6, "expected ':' after a property name"],
    ['{\n  "password": "x"\n  "user": "y"\n}', 3, 3, "expected ',' or '}' after a property value"],
    ['[1, 2', 1, 6, 'the text ends inside an array'],
    ['{"a": "unterminated', 1, 7, 'a string is not terminated'],
    ['{"a": "tab\there"}', 1, 11, 'a control character (a raw newline or tab) inside a string'],
    ['{"a": "\\x"}', 1, 8, 'a bad escape sequence inside a string'],
    ['{"a": 01}', 1, 8, 'a malformed number'],
    ['{"a": tru}', 1, 7, 'expected a value (an object, array, string, number, true, false or null)'],
    ['{} {}', 1, 4, 'more text after the JSON value'],
    ['', 1, 1, 'the text ends where a value was expected'],
    ['\uFEFF{}', 1, 1, 'expected a value (an object, array, string, number, true, false or null)'],
  ])('%j: line %i, column %i, %s', (text, line, column, reason) => {
    expect(jsonSyntaxProblem(text)).toEqual({ line, column, reason });
  });

  it('agrees with JSON.parse on whether 3,000 mutated documents parse', () => {
    const base = JSON.stringify({ type: 'postgres', postgres: { host: 'db', port: 5432, password: SECRET, tls: { ca: '/x' } }, list: [1, -2.5e3, true, null, 'a\\"b\u00e9'] }, null, 2);
    const alphabet = '{}[]:,"\\ \n\t-0123456789.eEtrufalsn\u0001x';
    for (let seed = 1; seed <= 3000; seed++) {
      const next = random(seed);
      let text = base;
      for (let edits = 1 + Math.floor(next() * 3); edits > 0; edits--) {
        const at = Math.floor(next() * (text.length + 1));
        const op = next();
        if (op < 0.4) text = text.slice(0, at) + text.slice(at + 1);
        else if (op < 0.8) text = text.slice(0, at) + alphabet[Math.floor(next() * alphabet.length)] + text.slice(at);
        else text = text.slice(0, at);
      }
      let parses = true;
      try {
        JSON.parse(text);
      } catch {
        parses = false;
      }
      const problem = jsonSyntaxProblem(text);
      expect(problem === undefined, `seed ${seed}: ${JSON.stringify(text)}`).toBe(parses);
    }
  });
});

describe('a configuration file that is not JSON', () => {
  it('is INVALID_CONFIG naming the path, line, column and reason, and none of its text — a password at the fault included', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rollcall-json-syntax-'));
    const path = join(dir, 'registry.json');
    // A password left unquoted is the fault: Node's own message quotes the text around it.
    const text = `{\n  "type": "postgres",\n  "postgres": { "password": ${SECRET}, "user": "app" }\n}\n`;
    writeFileSync(path, text);
    let native = '';
    try {
      JSON.parse(text);
    } catch (err) {
      native = (err as Error).message;
    }
    expect(native, 'the runtime quotes the text (else this test proves nothing)').toContain('hunter2');
    let caught: unknown;
    try {
      fileLayer(path);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigurationError);
    const error = caught as ConfigurationError;
    expect(error.message).toBe(`[rollcall] [core] ${path}: the configuration file is not valid JSON: expected a value (an object, array, string, number, true, false or null) at line 3, column 29 (its text is not shown: it may hold secrets)`);
    expect(error.cause).toBeUndefined();
    expect(JSON.stringify(error) + String(error.stack)).not.toContain('hunter2');
  });
});
