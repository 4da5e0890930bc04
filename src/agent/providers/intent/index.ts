// The offline intent model.
export { IntentProvider, type IntentProviderOptions } from './provider.js';
export { interpret, type Interpretation } from './interpret.js';
export { SentenceSet, type SentenceSetOptions } from './sentence-set.js';
export { isQuestion } from './question.js';
export { SHIPPED_SENTENCES, type Problem as SentenceProblem } from './language.js';
