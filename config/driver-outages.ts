/**
 * Which errors of a store driver mean "down or unreachable", added by each adapter when its module
 * loads: a driver's errors cannot be thrown before then, and the embedded default loads no driver.
 */
type OutageTest = (error: object) => boolean;

const tests: OutageTest[] = [];

export function recogniseDriverOutages(test: OutageTest): void {
  if (!tests.includes(test)) tests.push(test);
}

export function isDriverOutage(error: object): boolean {
  return tests.some((test) => test(error));
}
