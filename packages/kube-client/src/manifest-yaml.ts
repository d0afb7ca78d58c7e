/**
 * Kubernetes objects as a multi-document YAML manifest, for generated files
 * that `kubectl apply -f` reads and people review: block style, keys in the
 * order given, a multi-line string (a CEL expression) as a literal block, any
 * other string plain when YAML reads it back as the same string, else quoted.
 */
export function manifestYaml(documents: readonly unknown[]): string {
  return documents.map((d) => lines(d, 0).join('\n') + '\n').join('---\n');
}

/** A string YAML reads back unchanged without quotes: no indicator first, no `: ` or ` #`, not a bool, null or number. */
const PLAIN = /^[A-Za-z_/][-A-Za-z0-9_./ ]*$/;
const RESERVED = /^(true|false|yes|no|on|off|null|y|n)$/i;

function scalar(value: unknown): string {
  if (typeof value === 'string') return PLAIN.test(value) && !value.endsWith(' ') && !RESERVED.test(value) ? value : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null) return 'null';
  throw new TypeError(`not a manifest value: ${typeof value}`);
}

function isBlock(value: unknown): value is string {
  // A literal block keeps every line but the last newline, and takes its indentation from the first line.
  return typeof value === 'string' && value.includes('\n') && !value.endsWith('\n') && !/^\s/.test(value);
}

/** `value` at `indent` spaces, as the lines after a key (or a dash) that is already written. */
function lines(value: unknown, indent: number): string[] {
  const pad = ' '.repeat(indent);
  if (Array.isArray(value)) {
    return value.flatMap((item) => {
      if (item !== null && typeof item === 'object' && !Array.isArray(item) && Object.keys(item).length > 0) {
        const [first, ...rest] = lines(item, indent + 2);
        return [`${pad}- ${first!.slice(indent + 2)}`, ...rest];
      }
      return entry(`${pad}-`, item, indent);
    });
  }
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => entry(`${pad}${scalar(k)}:`, v, indent));
  return [`${pad}${scalar(value)}`];
}

function entry(head: string, value: unknown, indent: number): string[] {
  if (isBlock(value)) return [`${head} |-`, ...value.split('\n').map((l) => (l ? `${' '.repeat(indent + 2)}${l}` : ''))];
  if (Array.isArray(value)) return value.length ? [head, ...lines(value, indent + 2)] : [`${head} []`];
  if (value !== null && typeof value === 'object') return Object.keys(value).length ? [head, ...lines(value, indent + 2)] : [`${head} {}`];
  return [`${head} ${scalar(value)}`];
}
