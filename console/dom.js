// A tiny element builder: h('td', { class: 'x', onclick }, 'text', child). Text is always set as
// text (never parsed as HTML), so names and messages from the cluster cannot inject markup.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v); // CSSOM: allowed by the CSP
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

/** A coloured state word; the class is the state, lowercased (style.css colours them). */
export function badge(state, title) {
  const s = String(state ?? 'UNKNOWN');
  return h('span', { class: `badge s-${s.toLowerCase().replace(/^task_/, '').replace(/[^a-z0-9]+/g, '-')}`, title }, s.replace(/^TASK_/, ''));
}

export function table(headers, rows, attrs) {
  return h('table', { class: 'grid', ...attrs }, h('thead', {}, h('tr', {}, headers.map((x) => h('th', {}, x)))), h('tbody', {}, rows));
}

export function empty(text) {
  return h('div', { class: 'empty' }, text);
}
