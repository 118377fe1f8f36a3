/**
 * Sizes in bytes as Mesos' flags write them (`100MB`, `4GB`, `512KB`, `1024B`; binary units)
 * and as messages show them to people (`1.5 MB`). Pure.
 */

const UNITS: ReadonlyArray<[string, number]> = [
  ['TB', 2 ** 40],
  ['GB', 2 ** 30],
  ['MB', 2 ** 20],
  ['KB', 2 ** 10],
  ['B', 1],
];

/** Parses `100MB`, `1.5GB`, `0B` (a unit is required, as in Mesos' Bytes); an error says what is wrong. */
export function parseBytes(text: string): { ok: true; value: number } | { ok: false; error: string } {
  const m = /^([0-9]+(?:\.[0-9]+)?)\s*(TB|GB|MB|KB|B)$/i.exec(text.trim());
  if (m === null) return { ok: false, error: 'expected a size such as 100MB, 2GB, 512KB or 0B' };
  const unit = UNITS.find(([u]) => u === (m[2] ?? '').toUpperCase());
  const value = Math.round(Number(m[1]) * (unit?.[1] ?? 1));
  if (!Number.isSafeInteger(value)) return { ok: false, error: 'size too large' };
  return { ok: true, value };
}

/** A size as Mesos' flags write it: the largest unit that divides it exactly (`100MB`, `1536KB`, `0B`). */
export function formatBytesFlag(bytes: number): string {
  for (const [unit, size] of UNITS) if (bytes >= size && bytes % size === 0) return `${bytes / size}${unit}`;
  return `${bytes}B`;
}

/** A size for people: one decimal in the largest unit it reaches (`0 B`, `812 B`, `3.9 MB`). */
export function formatBytes(bytes: number): string {
  for (const [unit, size] of UNITS) {
    if (size > 1 && bytes >= size) return `${(bytes / size).toFixed(1)} ${unit}`;
  }
  return `${bytes} B`;
}
