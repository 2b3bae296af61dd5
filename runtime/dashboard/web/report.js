// `crucible report --html`: draws window.CRUCIBLE_REPORT ({report, metrics}) with the dashboard's charts.
(function () {
  'use strict';
  const data = window.CRUCIBLE_REPORT;
  const r = data.report, rows = data.metrics;
  const main = document.getElementById('report');
  const fmt = (v, d) => (typeof v === 'number' ? v.toFixed(d === undefined ? 2 : d) : '–');

  function section(title) {
    const s = document.createElement('section');
    const h = document.createElement('h2');
    h.textContent = title;
    s.appendChild(h);
    main.appendChild(s);
    return s;
  }
  function div(parent, id) {
    const d = document.createElement('div');
    if (id) d.id = id;
    parent.appendChild(d);
    return d;
  }
  function table(parent, head, items) {
    const t = document.createElement('table');
    const tr = document.createElement('tr');
    head.forEach((h) => { const th = document.createElement('th'); th.textContent = h; tr.appendChild(th); });
    t.appendChild(tr);
    items.forEach((it) => {
      const row = document.createElement('tr');
      it.forEach((v) => { const td = document.createElement('td'); td.textContent = v; row.appendChild(td); });
      t.appendChild(row);
    });
    parent.appendChild(t);
  }

  const summary = section('Run');
  table(summary, ['steps', 'wall s', 'candidates', 'tasks faster than eager', 'reward, first fifth', 'reward, last fifth'],
        [[r.steps, fmt(r.wall_s, 0), r.candidates, r.tasks_faster + ' of ' + r.tasks_total,
          fmt(r.first_fifth_reward, 3), fmt(r.last_fifth_reward, 3)]]);

  const learning = section('Learning');
  const grid = div(learning);
  grid.className = 'charts';
  const reward = CrucibleCharts.series(rows, [{ key: 'reward_mean', label: 'reward' }]);
  const rates = CrucibleCharts.series(rows, [{ key: 'correct_rate', label: 'correct' }, { key: 'flagged_rate', label: 'flagged' }]);
  CrucibleCharts.line(div(grid, 'chart-reward'), 'Reward per step', reward.x, reward.series);
  CrucibleCharts.line(div(grid, 'chart-rates'), 'Outcomes over time: correct and flagged rate', rates.x, rates.series);
  CrucibleCharts.line(div(grid, 'chart-throughput'), 'Throughput', reward.x,
                      [{ label: 'scored / s', values: CrucibleCharts.throughput(rows) }], 'candidates / s');
  const speed = CrucibleCharts.series(rows, [{ key: 'speedup_mean', label: 'mean verified speedup' }]);
  CrucibleCharts.line(div(grid, 'chart-speedup'), 'Speedup of correct candidates', speed.x, speed.series, 'x eager');

  const kernels = section('Best verified speedup per task');
  const cuda = r.tasks.some((t) => t.best_vs_graph > 0);
  const passed = r.tasks.filter((t) => t.best_speedup > 0);
  CrucibleCharts.bars(div(kernels, 'chart-best'), 'against eager' + (cuda ? ' and the CUDA graph' : ''),
    passed.map((t) => ({ task: t.task, values: cuda ? [t.best_speedup, t.best_vs_graph] : [t.best_speedup] })),
    cuda ? ['vs eager', 'vs CUDA graph'] : ['vs eager']);
  table(kernels, ['task', 'groups', 'first reward', 'last reward', 'best vs eager', 'vs CUDA graph'],
        r.tasks.map((t) => [t.task, t.groups, fmt(t.first_reward, 3), fmt(t.last_reward, 3),
                            t.best_speedup > 0 ? fmt(t.best_speedup) + 'x' : '–',
                            t.best_vs_graph > 0 ? fmt(t.best_vs_graph) + 'x' : '–']));
  const summaries = [['vs eager', r.vs_eager], ['vs CUDA graph', r.vs_graph]].filter((s) => s[1] && s[1].tasks > 0);
  if (summaries.length) {
    table(kernels, ['baseline', 'tasks', 'mean', 'median', 'geomean'],
          summaries.map(([name, s]) => [name, s.tasks, fmt(s.mean), fmt(s.median), fmt(s.geomean)]));
  }

  const verdicts = section('Outcomes');
  table(verdicts, ['outcome', 'candidates'], Object.keys(r.outcomes).map((k) => [k, r.outcomes[k]]));
  if (Object.keys(r.hack_flags).length)
    table(verdicts, ['hack flag', 'candidates'], Object.keys(r.hack_flags).map((k) => [k, r.hack_flags[k]]));
  document.body.setAttribute('data-drawn', String(document.querySelectorAll('canvas, svg.bars').length));
})();
