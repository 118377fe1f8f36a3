/**
 * The one guard of every wait in the tests and their harness: how long a wait for an event (a
 * log line, a message, an update, a condition) may take before the test fails saying what it
 * waited for. It is a guard against hanging, not a guess at how fast the machine is: a passing
 * wait returns as soon as its event comes, so a generous guard costs a passing run nothing,
 * while a short one fails a correct run on a loaded machine (another build, two test runs at
 * once on 2 cores). A wait that needs a specific bound says why where it passes one. A test
 * with a `{ timeout }` of its own keeps it above the sum of its guards (one of these per wait
 * it makes, its own helpers' waits included, rounded up to whole minutes), so a hang fails with
 * the guard's message, which says what was awaited, not with the test's.
 */
export const EVENT_DEADLINE_MS = 30_000;
