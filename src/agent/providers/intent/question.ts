// Is what was said a question? Questions are answered by reads alone, by this
// model and - held for confirmation - by any engine whose model turns "is the
// light on?" into turn_on. The question words are the language's data
// (`question_words` in sentences/<language>/_common.yaml).
import type { CompiledLanguage } from './matcher.js';
import { SentenceSet } from './sentence-set.js';
import type { Token } from './normalize.js';

/** The first word (after polite openings) is a question word. */
export function isQuestionTokens(tokens: Token[], lang: CompiledLanguage): boolean {
  const first = tokens[0];
  if (!first) return false;
  const words = lang.list('question_word');
  return !!words && words.match(tokens, 0).length > 0;
}

/**
 * Is this user text a question (in the shipped language unless one is given)?
 * Engines use it to hold an actuator call for confirmation when the user only asked.
 */
export function isQuestion(text: string, sentences: SentenceSet = SentenceSet.shipped()): boolean {
  const lang = sentences.current();
  return isQuestionTokens(lang.normalizer.tokenize(text, true), lang);
}
