// Headspace dashboard: icons as inline SVG, so that they show on a machine without emoji or
// symbol fonts. Built with the DOM (no markup strings).

const ICONS = {
  agent: 'M12 3a9 9 0 1 0 0 18a9 9 0 1 0 0-18zm0 5a4 4 0 1 1 0 8a4 4 0 1 1 0-8z',
  user: 'M5 12h11M12 7l5 5l-5 5',
  close: 'M6 6l12 12M18 6L6 18',
  theme: 'M12 3a9 9 0 1 0 0 18zM12 3a9 9 0 0 1 0 18',
  more: 'M5 12h.01M12 12h.01M19 12h.01',
  bell: 'M6 16V11a6 6 0 0 1 12 0v5l2 2H4zM10 20a2 2 0 0 0 4 0',
  send: 'M4 12l16-8l-6 16l-2-7z',
  stop: 'M7 7h10v10H7z',
  clear: 'M4 7h16M9 7V4h6v3M6 7l1 13h10l1-13',
  down: 'M12 5v14M6 13l6 6l6-6',
  tool: 'M14 6l4 4l-8 8H6v-4zM13 7l4 4',
  help: 'M9 9a3 3 0 1 1 4 2.8c-.6.3-1 .9-1 1.6V14M12 18h.01',
  // Push to this device (push.js).
  phone: 'M8 3h8a1 1 0 0 1 1 1v16a1 1 0 0 1-1 1H8a1 1 0 0 1-1-1V4a1 1 0 0 1 1-1zM11 18h2',
  // Voice (voice.js): dictation, reading aloud, and the three sound modes of #voice.
  mic: 'M12 3a3 3 0 0 1 3 3v5a3 3 0 0 1-6 0V6a3 3 0 0 1 3-3zM6 11a6 6 0 0 0 12 0M12 17v4M9 21h6',
  speak: 'M4 9h4l5-4v14l-5-4H4zM16 9a4 4 0 0 1 0 6M19 6a8 8 0 0 1 0 12',
  'sound-off': 'M4 9h4l5-4v14l-5-4H4zM16 9l5 6M21 9l-5 6',
  tones: 'M9 18V5l10-2v13M3 18a3 3 0 1 0 6 0a3 3 0 1 0-6 0M13 16a3 3 0 1 0 6 0a3 3 0 1 0-6 0',
  'hands-free': 'M4 15v-3a8 8 0 0 1 16 0v3M4 14h3v6H4zM17 14h3v6h-3z',
};

/// An inline SVG icon, drawn with the current text colour.
export function icon(name, cls) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('class', `icon-svg ${cls || ''}`.trim());
  svg.setAttribute('aria-hidden', 'true');
  const p = document.createElementNS(ns, 'path');
  p.setAttribute('d', ICONS[name] || ICONS.agent);
  svg.appendChild(p);
  return svg;
}

/// Puts icon `name` in element `e` in place of the one it shows (a button whose icon says its
/// state: the sound mode's).
export function setIcon(e, name) {
  const old = e.querySelector(':scope > svg');
  if (old) old.replaceWith(icon(name)); else e.prepend(icon(name));
  e.dataset.icon = name;
}

/// Fills every `[data-icon]` placeholder of the static page with its icon.
export function drawIcons(root) {
  for (const e of (root || document).querySelectorAll('[data-icon]')) {
    if (!e.querySelector('svg')) e.prepend(icon(e.dataset.icon));
  }
}
