// The offline intent model.
export { IntentProvider, type IntentProviderOptions } from './provider.js';
export { interpret, type Interpretation } from './interpret.js';
export { tokenize } from './normalize.js';
