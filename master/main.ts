#!/usr/bin/env node
/**
 * drydock-master's executable (package.json `bin`, the systemd unit, the local cluster): the
 * door of the house. Everything it runs lives in master/process/ (main.ts there: flags ->
 * config -> registry -> listen -> leadership -> a term); this file only keeps the path that
 * hosts and scripts know, dist/master/main.js.
 */

import './process/main.js';
