// Speaking to the chat and hearing its answers, where the browser can.
import { $, SPEAK_KEY, state, toast } from './shared.js';

/** Read answers aloud and push to talk, where the browser can; what is heard goes to send(text). */
export function setupSpeech(send) {
  // Answers read aloud (speech synthesis), where the browser has it.
  if ('speechSynthesis' in window && typeof SpeechSynthesisUtterance === 'function') {
    $('#speak-label').hidden = false;
    const speak = $('#speak');
    speak.checked = localStorage.getItem(SPEAK_KEY) === '1';
    speak.addEventListener('change', () => {
      localStorage.setItem(SPEAK_KEY, speak.checked ? '1' : '0');
      if (!speak.checked) speechSynthesis.cancel();
    });
  }
  // Push to talk (speech recognition), where the browser has it.
  const Recognition = window.SpeechRecognition || window.webkitSpeechRecognition;
  if (!Recognition) return;
  const button = $('#ptt');
  const input = $('#chat-input');
  button.hidden = false;
  let rec = null;
  let heard = '';
  const begin = (ev) => {
    ev.preventDefault();
    if (rec || state.turn) return;
    heard = '';
    rec = new Recognition();
    rec.lang = document.documentElement.lang || navigator.language || 'en-US';
    rec.interimResults = true;
    rec.continuous = true;
    rec.onresult = (e) => {
      let text = '';
      for (let i = 0; i < e.results.length; i++) text += e.results[i][0].transcript;
      heard = text.trim();
      input.value = heard;
    };
    rec.onerror = (e) => {
      if (e.error !== 'aborted' && e.error !== 'no-speech') toast(`Speech recognition: ${e.error}`);
    };
    rec.onend = () => {
      button.classList.remove('listening');
      button.setAttribute('aria-pressed', 'false');
      rec = null;
      if (heard) {
        input.value = '';
        void send(heard);
      }
    };
    button.classList.add('listening');
    button.setAttribute('aria-pressed', 'true');
    try {
      rec.start();
    } catch (err) {
      toast(`Cannot listen: ${err.message}`);
      rec = null;
    }
  };
  const end = () => rec?.stop();
  button.addEventListener('pointerdown', begin);
  button.addEventListener('pointerup', end);
  button.addEventListener('pointerleave', end);
  button.addEventListener('pointercancel', end);
  button.addEventListener('keydown', (ev) => {
    if ((ev.key === ' ' || ev.key === 'Enter') && !ev.repeat) begin(ev);
  });
  button.addEventListener('keyup', (ev) => {
    if (ev.key === ' ' || ev.key === 'Enter') end();
  });
}

export function speak(text) {
  if (!text || !$('#speak').checked || !('speechSynthesis' in window)) return;
  speechSynthesis.cancel();
  speechSynthesis.speak(new SpeechSynthesisUtterance(text));
}
