/**
 * JSON with exact int64s. Mesos writes times as int64 nanoseconds (1443830400000000000),
 * beyond JavaScript's exact integers; these must round-trip to the digit. Integers that a
 * double cannot hold exactly are parsed into bigints, and bigints are written as bare digits.
 */

const BIG = '\u0000int64:';

/**
 * Parses JSON; integer literals outside the safe range come back as bigint.
 * Throws SyntaxError with V8's message on bad input, like JSON.parse.
 */
export function parseJson(text: string): unknown {
  const marked = markBigIntegers(text);
  if (marked === text) return JSON.parse(text);
  return JSON.parse(marked, (_key, value: unknown) =>
    typeof value === 'string' && value.startsWith(BIG) ? BigInt(value.slice(BIG.length)) : value,
  );
}

/** Quotes integer literals with more than 15 digits (outside strings) so JSON.parse keeps them. */
function markBigIntegers(text: string): string {
  // Fast path: no run of 16+ digits anywhere.
  if (!/[0-9]{16}/.test(text)) return text;
  let out = '';
  let last = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 0x5c /* \ */) i += 2;
        else if (d === 0x22) { i++; break; }
        else i++;
      }
      continue;
    }
    if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      const start = i;
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if ((d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) i++;
        else break;
      }
      const token = text.slice(start, i);
      if (/^-?[0-9]+$/.test(token) && !Number.isSafeInteger(Number(token))) {
        out += text.slice(last, start) + JSON.stringify(BIG + token);
        last = i;
      }
      continue;
    }
    i++;
  }
  return out + text.slice(last);
}

/** JSON.stringify that writes bigints as bare integer literals. */
export function stringifyJson(value: unknown): string {
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
