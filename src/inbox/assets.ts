/**
 * The inbox's static page, script and style. The page holds no data: the script fetches JSON and
 * builds the DOM with textContent only, so nothing a model wrote is ever parsed as HTML.
 */

export const inboxPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>toolgate · approvals inbox</title>
<link rel="stylesheet" href="/assets/inbox.css">
<script src="/assets/inbox.js" defer></script>
</head>
<body>
<header>
  <h1>toolgate · approvals inbox</h1>
  <div id="who">signed in as <strong id="approver-name"></strong> <form method="post" action="/logout" id="logout-form"><input type="hidden" name="csrf" id="logout-csrf"><button type="submit">Sign out</button></form></div>
</header>
<main>
  <section>
    <h2>Waiting for a decision <span id="pending-count" class="badge">0</span> <span id="updated" class="muted"></span></h2>
    <p id="notice" role="status"></p>
    <div id="pending"></div>
  </section>
  <section class="side">
    <h2>Overview</h2>
    <img id="overview" src="/api/overview.svg" alt="Calls by status and by tool" width="640">
    <h2>Recent decisions</h2>
    <table id="decisions"><thead><tr><th>decided</th><th>decision</th><th>by</th><th>tool</th><th>status</th><th>comment</th></tr></thead><tbody></tbody></table>
  </section>
</main>
</body>
</html>
`;

export function loginPage(message?: string): string {
  // The message is one of a few fixed strings chosen by the server, never user input.
  const notice = message ? `<p class="error">${message}</p>` : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>toolgate · sign in</title>
<link rel="stylesheet" href="/assets/inbox.css">
</head>
<body class="login">
<form method="post" action="/login" id="login-form">
  <h1>toolgate · approvals inbox</h1>
  ${notice}
  <label for="token">Approver token</label>
  <input id="token" name="token" type="password" autocomplete="current-password" required>
  <button type="submit">Sign in</button>
  <p class="muted">Tokens are in the approvers file of the toolgate data directory.</p>
</form>
</body>
</html>
`;
}

export const inboxStyle = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222;background:#f6f7f9}
header{display:flex;justify-content:space-between;align-items:center;padding:10px 20px;background:#263238;color:#fff}
header h1{font-size:18px;margin:0}
header form{display:inline}
main{display:grid;grid-template-columns:minmax(420px,1fr) 660px;gap:20px;padding:16px 20px}
h2{font-size:15px;margin:8px 0}
.badge{background:#f9a825;color:#000;border-radius:10px;padding:1px 8px;font-size:12px}
.muted{color:#777;font-size:12px;font-weight:normal}
.card{background:#fff;border:1px solid #dde;border-radius:6px;padding:12px;margin-bottom:12px}
.card h3{margin:0 0 6px;font-size:15px}
.card dl{display:grid;grid-template-columns:110px 1fr;gap:2px 8px;margin:6px 0}
.card dt{color:#666}
.card dd{margin:0;word-break:break-word}
pre.arguments{background:#f3f3f3;padding:8px;border-radius:4px;white-space:pre-wrap;word-break:break-word;max-height:240px;overflow:auto}
.preview{background:#fff8e1;border-left:3px solid #f9a825;padding:6px 8px;white-space:pre-wrap}
.actions{display:flex;gap:8px;align-items:center;margin-top:8px}
.actions input{flex:1;padding:5px}
button{padding:5px 12px;border-radius:4px;border:1px solid #888;background:#fff;cursor:pointer}
button.approve{background:#2e7d32;color:#fff;border-color:#2e7d32}
button.reject{background:#c62828;color:#fff;border-color:#c62828}
.error{color:#b71c1c}
.ok{color:#1b5e20}
.warn{color:#8a5300}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{border-bottom:1px solid #e3e3e3;padding:4px 6px;text-align:left;font-size:12px}
body.login{display:flex;justify-content:center;padding-top:80px}
#login-form{background:#fff;padding:24px;border:1px solid #dde;border-radius:6px;width:340px;display:flex;flex-direction:column;gap:8px}
`;

export const inboxScript = `
'use strict';
(function () {
  let csrfToken = '';
  const byId = (id) => document.getElementById(id);
  const element = (tag, text, className) => {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  };
  const timeLeft = (expiresAt) => {
    const ms = Date.parse(expiresAt) - Date.now();
    if (!(ms > 0)) return 'expired';
    const minutes = Math.floor(ms / 60000);
    if (minutes >= 120) return Math.floor(minutes / 60) + ' h ' + (minutes % 60) + ' min';
    if (minutes >= 1) return minutes + ' min';
    return Math.ceil(ms / 1000) + ' s';
  };
  const notice = (text, kind) => {
    const node = byId('notice');
    node.textContent = text;
    node.className = kind;
  };
  async function api(path, options) {
    const response = await fetch(path, Object.assign({ credentials: 'same-origin' }, options || {}));
    if (response.status === 401) { window.location.assign('/login'); throw new Error('signed out'); }
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || ('HTTP ' + response.status));
    return body;
  }
  async function decide(callId, runId, decision, comment, card) {
    for (const button of card.querySelectorAll('button')) button.disabled = true;
    try {
      const body = await api('/api/decisions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': csrfToken },
        body: JSON.stringify({ callId: callId, runId: runId, decision: decision, comment: comment }),
      });
      notice((decision === 'approve' ? 'Approved ' : 'Rejected ') + callId, 'ok');
      card.dataset.decided = body.state;
    } catch (error) {
      notice('Not decided: ' + error.message, 'error');
      for (const button of card.querySelectorAll('button')) button.disabled = false;
    }
    refresh();
  }
  function renderCall(call) {
    const card = element('article', undefined, 'card');
    card.dataset.callId = call.callId;
    card.dataset.runId = call.runId;
    card.appendChild(element('h3', call.tool));
    const details = element('dl');
    const row = (label, value) => { details.appendChild(element('dt', label)); details.appendChild(element('dd', value)); };
    row('tier', call.tier || 'unknown');
    row('requester', call.principal + ' (' + call.principalKind + ') in ' + call.tenant);
    row('time left', timeLeft(call.expiresAt));
    row('approvers', (call.approvers || []).join(', '));
    row('call', call.callId);
    card.appendChild(details);
    card.appendChild(element('div', 'Arguments', 'muted'));
    card.appendChild(element('pre', JSON.stringify(call.input, null, 2), 'arguments'));
    if (call.preview) {
      card.appendChild(element('div', 'Preview of the effect', 'muted'));
      card.appendChild(element('div', call.preview, 'preview'));
    }
    if (call.refusedDecisions && call.refusedDecisions.length > 0) {
      const refused = call.refusedDecisions[call.refusedDecisions.length - 1];
      card.appendChild(element('p', 'Refused: ' + refused.decision + ' by ' + refused.claimedApprover + ': ' + refused.reason, 'error'));
    }
    const actions = element('div', undefined, 'actions');
    const comment = element('input');
    comment.placeholder = 'comment (required to reject)';
    comment.maxLength = 2000;
    comment.setAttribute('aria-label', 'comment');
    const approve = element('button', 'Approve', 'approve');
    const reject = element('button', 'Reject', 'reject');
    approve.addEventListener('click', () => decide(call.callId, call.runId, 'approve', comment.value, card));
    reject.addEventListener('click', () => decide(call.callId, call.runId, 'reject', comment.value, card));
    actions.append(comment, approve, reject);
    card.appendChild(actions);
    return card;
  }
  function renderDecisions(decisions) {
    const body = byId('decisions').querySelector('tbody');
    body.replaceChildren(...decisions.map((decision) => {
      const tr = element('tr');
      for (const value of [decision.decidedAt.replace('T', ' ').slice(0, 19), decision.decision, decision.decidedBy, decision.tool, decision.status, decision.comment || '']) tr.appendChild(element('td', value));
      return tr;
    }));
  }
  async function refresh() {
    try {
      const data = await api('/api/pending');
      const container = byId('pending');
      // Keep a card the approver is typing in; replace the others. A card whose call was restarted
      // (a new run, perhaps with other arguments) is replaced even then, and the approver is told.
      const focused = document.activeElement && document.activeElement.closest ? document.activeElement.closest('article') : null;
      const cards = data.calls.map((call) => {
        if (!focused || focused.dataset.callId !== call.callId) return renderCall(call);
        if (focused.dataset.runId === call.runId) return focused;
        notice('The call ' + call.callId + ' was restarted and may ask for other arguments: read its card again before deciding.', 'error');
        return renderCall(call);
      });
      container.replaceChildren(...cards);
      if (cards.length === 0) container.appendChild(element('p', 'Nothing is waiting for a decision.', 'muted'));
      byId('pending-count').textContent = String(data.calls.length);
      byId('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
      renderDecisions((await api('/api/decisions')).decisions);
      byId('overview').src = '/api/overview.svg?at=' + Date.now();
    } catch (error) {
      byId('updated').textContent = 'update failed: ' + error.message;
    }
  }
  async function start() {
    const session = await api('/api/session');
    csrfToken = session.csrfToken;
    byId('approver-name').textContent = session.approver + (session.roles.length ? ' (' + session.roles.join(', ') + ')' : '');
    byId('logout-csrf').value = csrfToken;
    await refresh();
    setInterval(refresh, 2000);
  }
  document.addEventListener('DOMContentLoaded', () => { start().catch((error) => notice(error.message, 'error')); });
})();
`;
