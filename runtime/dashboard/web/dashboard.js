// The live page: renders /api/state and follows /api/events (server-sent events); the scale buttons POST to
// /api/scale with the run's token, read from the URL's #token=... (printed when the run starts).
(function () {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const token = (new URLSearchParams(location.hash.slice(1))).get('token') || '';
  const fmt = (v, d) => (typeof v === 'number' ? v.toFixed(d === undefined ? 2 : d) : '–');
  let rows = [];
  let charts = null;
  let state = null;
  let shownKernel = null;

  function cell(tr, text, cls) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function fill(tbody, items, render) {
    tbody.innerHTML = '';
    items.forEach((it) => { const tr = document.createElement('tr'); render(tr, it); tbody.appendChild(tr); });
  }

  function card(label, value, id) {
    return '<div class="card"><div class="value" id="' + id + '">' + value + '</div><div class="label">' + label + '</div></div>';
  }

  function renderCards(s, busy, cuda) {
    $('cards').innerHTML = [
      card('candidates generated', s.candidates_generated, 'generated'),
      card('scored', s.candidates_scored, 'scored'),
      card('in flight', s.candidates_in_flight, 'in-flight'),
      card('scored / s', fmt(s.candidates_per_s), 'rate'),
      card('reward (last step)', fmt(s.reward_mean, 3), 'reward'),
      card('staleness', fmt(s.staleness_mean), 'staleness'),
      card(cuda ? 'GPU busy' : 'benchmarker busy', fmt(100 * busy, 0) + '%', 'busy'),
      card('re-dispatched', s.redispatched, 'redispatched'),
      card('nodes', (s.nodes || []).length, 'node-count'),
    ].join('');
  }

  // The roles' rows are built once per set of roles and then updated in place, so a count being typed and
  // a button about to be clicked survive the updates.
  let rolesShown = '';
  function renderRoles(s, run) {
    const roles = Object.keys(s.roles || {}).sort();
    const canScale = run.controls && token;
    const key = roles.join(',') + (canScale ? '+' : '-');
    if (key !== rolesShown) {
      rolesShown = key;
      $('scale-head').textContent = run.controls ? (token ? 'scale' : 'scale (open the URL with its #token)') : 'scale (read-only)';
      fill($('roles').tBodies[0], roles, (tr, role) => {
        tr.id = 'role-' + role;
        cell(tr, role);
        ['actors', 'busy', 'queued', 'restarts'].forEach((k) => { cell(tr, '', 'num').dataset.key = k; });
        const td = cell(tr, '');
        if (canScale && (run.scalable_roles || []).indexOf(role) >= 0) {
          const input = document.createElement('input');
          input.type = 'number'; input.min = '0'; input.className = 'count'; input.value = s.roles[role].actors;
          input.id = 'scale-count-' + role;
          const button = document.createElement('button');
          button.textContent = 'scale'; button.id = 'scale-button-' + role;
          button.onclick = () => scale(role, parseInt(input.value, 10));
          td.appendChild(input); td.appendChild(button);
        }
      });
    }
    roles.forEach((role) => {
      $('role-' + role).querySelectorAll('td[data-key]').forEach((td) => { td.textContent = s.roles[role][td.dataset.key]; });
    });
  }

  function scale(role, count) {
    $('message').textContent = 'scaling ' + role + ' to ' + count + '…';
    fetch('/api/scale', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Crucible-Token': token },
      body: JSON.stringify({ role: role, count: count }),
    }).then((r) => r.json().then((j) => ({ ok: r.ok, j: j })))
      .then(({ ok, j }) => {
        $('message').textContent = ok ? role + ' scaled to ' + count : 'refused: ' + j.error;
        $('message').className = ok ? 'ok' : 'bad';
        if (ok && state) { state.status = j.status; render(); }
      })
      .catch((e) => { $('message').textContent = 'no answer: ' + e; $('message').className = 'bad'; });
  }

  function renderNodes(s) {
    const nodes = s.nodes || [];
    $('nodes-section').hidden = nodes.length === 0;
    fill($('nodes').tBodies[0], nodes, (tr, n) => {
      cell(tr, n.node_id); cell(tr, n.host);
      cell(tr, Object.keys(n.roles).map((k) => k + ' ×' + n.roles[k]).join(', '));
      cell(tr, (n.devices || []).join(', '));
      cell(tr, n.in_flight, 'num'); cell(tr, n.queued, 'num'); cell(tr, fmt(n.silent_s, 1), 'num');
      cell(tr, n.draining ? 'draining' : '');
    });
  }

  function showKernel(c) {
    shownKernel = c.id;
    $('kernel').hidden = false;
    $('kernel-title').textContent = c.task + ' — ' + c.id + ' (' + fmt(c.speedup) + 'x vs eager, ' + c.outcome + ')';
    const notes = (c.evidence || []).concat(c.notes || []);
    $('kernel-notes').textContent = notes.length ? notes.join(' · ') : 'no evidence recorded against it';
    $('kernel-source').textContent = c.source || '';
  }

  function renderBest(best, cuda) {
    CrucibleCharts.bars($('chart-best'), 'Best verified speedup per task',
      best.map((c) => ({ task: c.task, values: cuda ? [c.speedup, c.speedup_vs_graph] : [c.speedup] })),
      cuda ? ['vs eager', 'vs CUDA graph'] : ['vs eager']);
    fill($('best').tBodies[0], best, (tr, c) => {
      tr.className = 'pick';
      tr.onclick = () => showKernel(c);
      cell(tr, c.task); cell(tr, fmt(c.speedup) + 'x', 'num');
      cell(tr, c.speedup_vs_graph > 0 ? fmt(c.speedup_vs_graph) + 'x' : '–', 'num');
      cell(tr, c.id); cell(tr, c.policy_version, 'num');
    });
    const again = best.find((c) => c.id === shownKernel);
    if (again) showKernel(again);
  }

  function renderHacks(hacks) {
    fill($('hacks').tBodies[0], hacks, (tr, c) => {
      cell(tr, c.id); cell(tr, c.task);
      const td = cell(tr, '');
      (c.flags || []).forEach((f) => { const s = document.createElement('span'); s.className = 'flag'; s.textContent = f; td.appendChild(s); });
      cell(tr, (c.evidence || []).join(' · '));
    });
  }

  function renderOutcomes(outcomes, rejected) {
    const items = Object.keys(outcomes || {}).map((k) => ['candidates ' + k, outcomes[k]])
      .concat(Object.keys(rejected || {}).map((k) => ['refused from the wire: ' + k, rejected[k]]));
    fill($('outcomes').tBodies[0], items, (tr, it) => { cell(tr, it[0]); cell(tr, it[1], 'num'); });
  }

  function render() {
    const s = state.status, run = state.run;
    $('run').textContent = run.dir;
    $('step').textContent = s.step;
    $('version').textContent = s.policy_version;
    $('wall').textContent = fmt(s.wall_s, 0) + ' s';
    renderCards(s, state.busy || 0, run.cuda);
    renderRoles(s, run);
    renderNodes(s);
    renderBest(state.best || [], run.cuda);
    renderHacks(state.hacks || []);
    renderOutcomes(state.outcomes, s.rejected);
  }

  function renderCharts() {
    const reward = CrucibleCharts.series(rows, [{ key: 'reward_mean', label: 'reward' }]);
    const rates = CrucibleCharts.series(rows, [{ key: 'correct_rate', label: 'correct' }, { key: 'flagged_rate', label: 'flagged' }]);
    const tput = { x: reward.x, series: [{ label: 'scored / s', values: CrucibleCharts.throughput(rows) }] };
    const speed = CrucibleCharts.series(rows, [{ key: 'speedup_mean', label: 'mean verified speedup' }]);
    if (!charts) {
      charts = {
        reward: CrucibleCharts.line($('chart-reward'), 'Reward per step', reward.x, reward.series),
        rates: CrucibleCharts.line($('chart-rates'), 'Correct and flagged rate', rates.x, rates.series),
        tput: CrucibleCharts.line($('chart-throughput'), 'Throughput', tput.x, tput.series, 'candidates / s'),
        speed: CrucibleCharts.line($('chart-speedup'), 'Speedup of correct candidates', speed.x, speed.series, 'x eager'),
      };
    } else {
      charts.reward.update(reward.x, reward.series);
      charts.rates.update(rates.x, rates.series);
      charts.tput.update(tput.x, tput.series);
      charts.speed.update(speed.x, speed.series);
    }
  }

  function connect() {
    const es = new EventSource('/api/events');
    es.addEventListener('state', (e) => {
      state = JSON.parse(e.data);
      $('conn').textContent = 'live';
      render();
    });
    es.addEventListener('metrics', (e) => { rows = rows.concat(JSON.parse(e.data)); renderCharts(); });
    es.onerror = () => { $('conn').textContent = 'reconnecting… (is the run still going?)'; };
    // The stream repeats everything after a reconnect: start the rows over.
    es.onopen = () => { rows = []; };
  }

  renderCharts();
  connect();
})();
