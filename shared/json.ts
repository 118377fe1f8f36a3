/**
 * JSON with exact int64s. Mesos writes times as int64 nanoseconds (1443830400000000000),
 * beyond JavaScript's exact integers; these must round-trip to the digit. Integers that a
 * double cannot hold exactly are parsed into bigints, and bigints are written as bare digits.
 *
 * `parseWireJson` is the one reader of JSON from the network (HTTP bodies, WebSocket frames):
 * bounded in depth, string and array size, with `null` read as unset (stout, Mesos' JSON
 * reader, treats null as an unset field), so no handler ever sees a null or a value deep
 * enough to overflow a recursive walk.
 */

const BIG = '\u0000int64:';

/** Bounds on JSON read from the network. */
export interface JsonLimits {
  /** Deepest nesting of arrays and objects. */
  readonly maxDepth: number;
  /** Longest string, in UTF-16 code units. */
  readonly maxStringLength: number;
  /** Most elements in one array. */
  readonly maxArrayLength: number;
}

/**
 * The bounds every network input is read with. Mesos messages nest about 10 deep (a TaskInfo's
 * container volumes); 64 leaves room and keeps recursive walks far from the stack's limit.
 * 100,000 elements fits a schedule of 50,000 machines; 1 Mi characters fits any id, command
 * or base64 payload a framework sends.
 */
export const WIRE_LIMITS: JsonLimits = { maxDepth: 64, maxStringLength: 1 << 20, maxArrayLength: 100_000 };

/** JSON that parses but is over a bound; the message says which and where. */
export class JsonLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JsonLimitError';
  }
}

/**
 * Parses JSON; integer literals outside the safe range come back as bigint.
 * Throws SyntaxError with V8's message on bad input, like JSON.parse.
 */
export function parseJson(text: string): unknown {
  const marked = markBigIntegers(text, Number.POSITIVE_INFINITY);
  if (marked === text) return JSON.parse(text);
  return JSON.parse(marked, (_key, value: unknown) =>
    typeof value === 'string' && value.startsWith(BIG) ? BigInt(value.slice(BIG.length)) : value,
  );
}

/**
 * Parses JSON from the network: exact int64s as parseJson, then within `limits`, with every
 * `null` dropped (an object key holding null is absent; a null array element is skipped).
 * Throws SyntaxError for bad JSON and JsonLimitError for JSON over a bound; neither message
 * repeats the input.
 */
export function parseWireJson(text: string, limits: JsonLimits = WIRE_LIMITS): unknown {
  // V8's JSON.parse is iterative, but every walk after it is recursive: refuse depth first.
  const marked = markBigIntegers(text, limits.maxDepth);
  const value: unknown = JSON.parse(marked);
  try {
    return clean(value, limits, marked !== text);
  } catch (e) {
    if (e instanceof OverLimit) throw new JsonLimitError(e.describe(limits));
    throw e;
  }
}

/**
 * A value over a bound, thrown by `clean` and caught at the top: each level it unwinds through
 * adds its key or index, so the path is built only when there is an error to report.
 */
class OverLimit {
  /** Keys (strings) and indexes (numbers), innermost first. */
  readonly steps: Array<string | number> = [];
  constructor(readonly what: 'string' | 'array') {}

  describe(limits: JsonLimits): string {
    let path = '';
    for (let k = this.steps.length - 1; k >= 0; k--) {
      const step = this.steps[k] as string | number;
      path = typeof step === 'number' ? `${path}[${step}]` : path === '' ? step : `${path}.${step}`;
    }
    return this.what === 'string'
      ? `string${at(path)} is longer than ${limits.maxStringLength} characters`
      : `array${at(path)} has more than ${limits.maxArrayLength} elements`;
  }
}

/**
 * Drops nulls, checks sizes, turns marked integers into bigints. Depth is already bounded.
 * Works in place: the value is JSON.parse's fresh output, seen by no one else.
 */
function clean(value: unknown, limits: JsonLimits, marked: boolean): unknown {
  if (typeof value === 'string') {
    if (value.length > limits.maxStringLength) throw new OverLimit('string');
    return marked && value.startsWith(BIG) ? BigInt(value.slice(BIG.length)) : value;
  }
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    if (value.length > limits.maxArrayLength) throw new OverLimit('array');
    // Null elements are skipped: the rest move down, and the array is cut to what is left.
    let kept = 0;
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      if (v === null) continue;
      try {
        value[kept++] = clean(v, limits, marked);
      } catch (e) {
        if (e instanceof OverLimit) e.steps.push(i);
        throw e;
      }
    }
    value.length = kept;
    return value;
  }
  const o = value as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    const v = o[key];
    // `__proto__` from JSON.parse is an own data property, but assigning it back would set the
    // prototype: no Mesos field has that name, so it goes.
    if (v === null || key === '__proto__') delete o[key];
    else if (typeof v === 'object' || typeof v === 'string') {
      try {
        const c = clean(v, limits, marked);
        // Objects and arrays are cleaned in place, and most strings stay as they are: write back only what changed.
        if (c !== v) o[key] = c;
      } catch (e) {
        if (e instanceof OverLimit) e.steps.push(key);
        throw e;
      }
    }
  }
  return o;
}

function at(path: string): string {
  return path === '' ? '' : ` at '${path.length > 80 ? `${path.slice(0, 80)}...` : path}'`;
}

/**
 * One pass over the text: quotes integer literals that a double cannot hold exactly (so
 * JSON.parse keeps their digits), and refuses nesting deeper than `maxDepth`.
 */
function markBigIntegers(text: string, maxDepth: number): string {
  // Fast path when depth needs no check: no run of 16+ digits anywhere.
  const needDigits = /[0-9]{16}/.test(text);
  if (!needDigits && maxDepth === Number.POSITIVE_INFINITY) return text;
  let out = '';
  let last = 0;
  let depth = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // Strings are most of a message's bytes: skipped with indexOf (native) to the first quote
      // with an even run of backslashes before it. Unterminated: JSON.parse reports it.
      let q = text.indexOf('"', i + 1);
      while (q !== -1) {
        let b = q - 1;
        while (text.charCodeAt(b) === 0x5c /* \ */) b--;
        if ((q - 1 - b) % 2 === 0) break;
        q = text.indexOf('"', q + 1);
      }
      i = q === -1 ? n : q + 1;
      continue;
    }
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > maxDepth) throw new JsonLimitError(`JSON nests deeper than ${maxDepth} levels`);
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    } else if (needDigits && (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39))) {
      const start = i;
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if ((d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) i++;
        else break;
      }
      if (i - start > 15) {
        const token = text.slice(start, i);
        if (/^-?[0-9]+$/.test(token) && !Number.isSafeInteger(Number(token))) {
          out += text.slice(last, start) + JSON.stringify(BIG + token);
          last = i;
        }
      }
      continue;
    }
    i++;
  }
  return last === 0 ? text : out + text.slice(last);
}

/** JSON.stringify that writes bigints as bare integer literals. */
export function stringifyJson(value: unknown): string {
  // Most values hold no bigint: JSON.stringify without a replacer is several times faster, and
  // it throws a TypeError at the first bigint it meets, which sends the value the slow way.
  try {
    return JSON.stringify(value);
  } catch (e) {
    if (!(e instanceof TypeError)) throw e;
  }
  let sawBig = false;
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'bigint') {
      sawBig = true;
      return BIG + v.toString();
    }
    return v;
  });
  if (!sawBig) return text;
  return text.replace(/"\\u0000int64:(-?[0-9]+)"/g, '$1');
}
