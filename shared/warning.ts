/**
 * HTTP `Warning` headers as Kubernetes sends them (`299 drydock "text"`: warn-code 299, a
 * persistent miscellaneous warning; RFC 7234 §5.5, whose quoted-string is RFC 9110 §5.6.4): how
 * the master writes one value per warning, and how a client reads them back from the one
 * comma-joined header `fetch` gives. Pure.
 */

/** The warn-agent the master names itself with. */
export const WARN_AGENT = 'drydock';

/** The most characters of one warning's text sent (a hostname may be long). */
export const MAX_WARNING_CHARS = 512;

/** The most warning values on one answer; the rest are counted in one more. */
export const MAX_WARNINGS = 20;

/**
 * The text as a quoted-string: `\` and `"` escaped with a backslash; anything outside printable
 * ASCII (a control character would end the header, and Node refuses characters past Latin-1)
 * becomes `?`; longer than MAX_WARNING_CHARS is cut with `...`.
 */
export function quotedString(text: string): string {
  const cut = text.length > MAX_WARNING_CHARS ? `${text.slice(0, MAX_WARNING_CHARS - 3)}...` : text;
  return `"${cut.replace(/[^\x20-\x7e]/g, '?').replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** One header value: `299 drydock "<text>"`. */
export function warningValue(text: string): string {
  return `299 ${WARN_AGENT} ${quotedString(text)}`;
}

/**
 * The Warning header's values for these texts: one each, at most MAX_WARNINGS, the last then
 * saying how many more there were. Empty: no header.
 */
export function warningValues(texts: readonly string[]): string[] {
  if (texts.length <= MAX_WARNINGS) return texts.map(warningValue);
  const shown = texts.slice(0, MAX_WARNINGS - 1).map(warningValue);
  shown.push(warningValue(`and ${texts.length - shown.length} more warnings like these`));
  return shown;
}

/** One warning read back. */
export interface Warning {
  readonly code: number;
  readonly agent: string;
  readonly text: string;
}

/**
 * The warnings of a Warning header as a client sees it (several values joined by `, `, commas
 * inside the quoted texts included). Reads as many well-formed values as there are and stops at
 * the first that is not one (a date after the text is skipped). Undefined or '' gives none.
 */
export function parseWarnings(header: string | null | undefined): Warning[] {
  const out: Warning[] = [];
  if (header === undefined || header === null) return out;
  const s = header;
  let i = 0;
  const skip = (re: RegExp): void => {
    while (i < s.length && re.test(s[i] as string)) i++;
  };
  while (i < s.length) {
    skip(/[ \t,]/);
    if (i >= s.length) break;
    const code = /^[0-9]{3}/.exec(s.slice(i));
    if (code === null) break;
    i += 3;
    if (s[i] !== ' ') break;
    skip(/ /);
    const start = i;
    skip(/[^ ]/);
    const agent = s.slice(start, i);
    skip(/ /);
    const text = quoted();
    if (text === undefined || agent === '') break;
    out.push({ code: Number(code[0]), agent, text });
    // An optional warn-date: ` "Sun, 06 Nov 1994 08:49:37 GMT"`.
    const save = i;
    skip(/ /);
    if (s[i] === '"') {
      if (quoted() === undefined) break;
    } else i = save;
  }
  return out;

  function quoted(): string | undefined {
    if (s[i] !== '"') return undefined;
    i++;
    let text = '';
    while (i < s.length) {
      const c = s[i] as string;
      if (c === '"') {
        i++;
        return text;
      }
      if (c === '\\' && i + 1 < s.length) {
        text += s[i + 1];
        i += 2;
        continue;
      }
      text += c;
      i++;
    }
    return undefined;
  }
}
