// Headspace dashboard: answering what an agent asks. The option buttons of a question or a
// permission (a click answers: POST .../answer {option}), and the answer form of an
// AskUserQuestion that one button cannot answer (several questions, multi-select, or a
// free-text "Other" answer): the server drives the pane's dialog through every question
// (POST .../answer {answers}).
import { api, el, toast } from './helpers.js';
import { micButton, stopDictation } from './voice.js';

/// Sends `answers` (one per question) for agent `agentId`; `button` stays disabled once
/// answered, and the form kept under `key` is forgotten.
async function postAnswers(agentId, answers, button, key) {
  button.disabled = true;
  try {
    await api(`/api/agents/${agentId}/answer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ answers }),
    });
    toast('Answered', 'ok');
    answerForms.delete(key);
  } catch (err) {
    button.disabled = false;
    toast(`Could not answer: ${err.message}`, 'error');
  }
}

/// Whether the tool input asks more than one option button can answer.
export function isWizard(dialog) {
  const qs = (dialog && dialog.questions) || [];
  return qs.length > 1 || qs.some((q) => q.multiSelect);
}

// Forms being filled in survive the re-renders of their strip or panel: one per place,
// agent and question.
const answerForms = new Map();

/// The form answering every question of `dialog` for agent `agentId`, shown in `place`.
export function answerForm(dialog, agentId, place) {
  const key = `${place}|${agentId}|${JSON.stringify(dialog.questions.map((q) => q.question))}`;
  const kept = answerForms.get(key);
  if (kept) return kept;
  const form = el('form', 'answer-form');
  form.dataset.agent = String(agentId);
  dialog.questions.forEach((q, qi) => {
    const set = el('fieldset', 'aq');
    set.appendChild(el('legend', null, q.question || `Question ${qi + 1}`));
    const type = q.multiSelect ? 'checkbox' : 'radio';
    (q.options || []).forEach((o, i) => {
      const label = el('label', 'aq-option');
      const input = el('input');
      input.type = type;
      input.name = `${place}-${agentId}-q${qi}`;
      input.value = String(i + 1);
      input.dataset.q = String(qi);
      label.append(input, document.createTextNode(` ${typeof o === 'string' ? o : o.label}`));
      set.appendChild(label);
    });
    const other = el('input', 'aq-other');
    other.type = 'text';
    other.dataset.q = String(qi);
    other.placeholder = q.multiSelect ? 'Or type an answer…' : 'Other…';
    other.setAttribute('aria-label', `Other answer to: ${q.question || ''}`);
    set.appendChild(other);
    form.appendChild(set);
  });
  const send = el('button', 'small', dialog.questions.length > 1 ? 'Answer all' : 'Answer');
  send.type = 'submit';
  form.appendChild(send);
  form.addEventListener('click', (e) => e.stopPropagation());
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    stopDictation();
    const answers = [];
    for (let qi = 0; qi < dialog.questions.length; qi++) {
      const q = dialog.questions[qi];
      const picked = [...form.querySelectorAll(`input[data-q="${qi}"]:checked`)].map((i) => Number(i.value));
      const typed = form.querySelector(`input.aq-other[data-q="${qi}"]`).value.trim();
      const name = q.question || `question ${qi + 1}`;
      if (picked.length && typed) { toast(`“${name}”: pick options or type an answer, not both`, 'error'); return; }
      if (typed) answers.push({ other: typed });
      else if (!picked.length) { toast(`“${name}” has no answer yet`, 'error'); return; }
      else answers.push(q.multiSelect ? { options: picked } : { option: picked[0] });
    }
    await postAnswers(agentId, answers, send, key);
  });
  answerForms.set(key, form);
  return form;
}

/// The free-text answer of a single AskUserQuestion ("Other…"), typed into its dialog's
/// "Type something." row by the server.
export function otherAnswer(agentId, place, text) {
  const key = `${place}|${agentId}|other|${text}`;
  const kept = answerForms.get(key);
  if (kept) return kept;
  const f = el('form', 'reply other-answer');
  const input = el('input');
  input.type = 'text';
  input.placeholder = 'Other…';
  input.setAttribute('aria-label', 'Other answer');
  const b = el('button', 'small', 'Answer');
  f.append(input, micButton(input), b);
  f.addEventListener('click', (e) => e.stopPropagation());
  f.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!input.value.trim()) return;
    stopDictation(); // what was heard is sent; nothing more comes into the box
    await postAnswers(agentId, [{ other: input.value.trim() }], b, key);
  });
  answerForms.set(key, f);
  return f;
}

/// The options of a question or permission dialog: with an agent, the first question's options
/// as buttons that answer it (see `answer`); else as text. Null when it has none.
export function options(question, agentId) {
  // AskUserQuestion: {questions: [{question, options: [{label}]}]}; permission: {options: [...]}.
  // With an agent, the first question's options are buttons that answer it in the pane (the
  // terminal numbers them from 1); the rest are shown as they are.
  const box = el('div', 'options');
  const qs = (question && question.questions) || (question ? [question] : []);
  qs.forEach((q, qi) => {
    (q.options || []).forEach((o, i) => {
      const label = typeof o === 'string' ? o : o.label;
      if (agentId !== undefined && qi === 0) {
        const b = el('button', 'answer', `${i + 1}. ${label}`);
        b.dataset.answer = String(i + 1);
        b.dataset.agent = String(agentId);
        box.appendChild(b);
      } else {
        box.appendChild(el('span', null, label));
      }
    });
  });
  return box.childElementCount ? box : null;
}

/// Answers agent `agentId`'s dialog with option `option` (an option button, or its number
/// key); `button` stays disabled once answered.
export async function answer(agentId, option, button) {
  button.disabled = true;
  try {
    const r = await api(`/api/agents/${agentId}/answer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ option: Number(option) }),
    });
    toast(`Answered “${r.label}”${r.verified ? '' : ' (the pane did not change; check it)'}`, r.verified ? 'ok' : 'error');
  } catch (e) {
    button.disabled = false;
    toast(`Could not answer: ${e.message}`, 'error');
  }
}
