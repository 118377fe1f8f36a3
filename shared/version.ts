/** Drydock's version and the Mesos API version it speaks. */
export const DRYDOCK_VERSION = '0.1.0';
/** The Mesos release whose API shapes Drydock implements (GET_VERSION's `version`). */
export const MESOS_API_VERSION = '1.12.0';
