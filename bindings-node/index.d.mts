// Types of the ESM entry (index.mjs): the CommonJS entry's exports plus a default.
import * as ferrolock from './index.js';

export * from './index.js';
export default ferrolock;
