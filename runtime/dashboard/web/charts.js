// The charts the dashboard and `crucible report --html` share: lines over learner steps (uPlot, vendored at
// build time) and bars per task (SVG). Without uPlot (a build that could not fetch it) a chart says so.
(function () {
  'use strict';
  const palette = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2'];

  function note(el, text) {
    const p = document.createElement('p');
    p.className = 'chart-note';
    p.textContent = text;
    el.appendChild(p);
  }

  // A line chart: x (steps) and series [{label, values}]. Returns {update(x, series)}.
  function line(el, title, x, series, yLabel) {
    el.innerHTML = '';
    el.classList.add('chart');
    if (typeof window.uPlot !== 'function') {
      note(el, title + ': no charts in this build (uPlot could not be vendored at build time)');
      return { update() {} };
    }
    const opts = {
      title: title,
      width: Math.max(280, el.clientWidth || 480),
      height: 220,
      scales: { x: { time: false } },
      axes: [{ label: 'step' }, { label: yLabel || '' }],
      series: [{ label: 'step' }].concat(series.map((s, i) => ({
        label: s.label, stroke: palette[i % palette.length], width: 2, points: { show: x.length < 40 },
      }))),
    };
    const plot = new window.uPlot(opts, [x].concat(series.map((s) => s.values)), el);
    return {
      plot: plot,
      update(nx, ns) { plot.setData([nx].concat(ns.map((s) => s.values))); },
    };
  }

  // Horizontal bars per task with a rule at 1.0x: rows [{task, values: [a, b]}], labels for the values.
  function bars(el, title, rows, labels) {
    el.innerHTML = '';
    el.classList.add('chart');
    const h = document.createElement('div');
    h.className = 'chart-title';
    h.textContent = title;
    el.appendChild(h);
    if (!rows.length) { note(el, 'no verified kernel yet'); return; }
    const ns = 'http://www.w3.org/2000/svg';
    const left = 170, right = 60, bar = 10, gap = 8, width = Math.max(360, el.clientWidth || 560);
    const groupH = labels.length * bar + gap;
    const height = rows.length * groupH + 30;
    let max = 1.0;
    rows.forEach((r) => r.values.forEach((v) => { if (v > max) max = v; }));
    const scale = (v) => left + (width - left - right) * (v / (max * 1.05));
    const svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('width', width);
    svg.setAttribute('height', height);
    svg.setAttribute('class', 'bars');
    const add = (tag, attrs, text) => {
      const e = document.createElementNS(ns, tag);
      Object.keys(attrs).forEach((k) => e.setAttribute(k, attrs[k]));
      if (text !== undefined) e.textContent = text;
      svg.appendChild(e);
      return e;
    };
    rows.forEach((r, i) => {
      const y = 10 + i * groupH;
      add('text', { x: left - 6, y: y + labels.length * bar / 2 + 4, 'text-anchor': 'end', class: 'bar-label' },
          r.task.length > 24 ? r.task.slice(0, 23) + '…' : r.task);
      r.values.forEach((v, k) => {
        if (!(v > 0)) return;
        add('rect', { x: left, y: y + k * bar, width: Math.max(1, scale(v) - left), height: bar - 1,
                      fill: palette[k % palette.length] });
        add('text', { x: scale(v) + 4, y: y + k * bar + bar - 2, class: 'bar-value' }, v.toFixed(2) + 'x');
      });
    });
    add('line', { x1: scale(1), x2: scale(1), y1: 0, y2: height - 20, class: 'bar-rule' });
    add('text', { x: scale(1), y: height - 6, 'text-anchor': 'middle', class: 'bar-value' }, '1.0x');
    labels.forEach((l, k) => {
      add('rect', { x: left + k * 130, y: height - 16, width: 10, height: 10, fill: palette[k % palette.length] });
      add('text', { x: left + k * 130 + 14, y: height - 7, class: 'bar-value' }, l);
    });
    el.appendChild(svg);
  }

  // The step series of metrics rows (metrics.jsonl objects): x, and the named fields.
  function series(rows, fields) {
    const x = rows.map((r) => r.step);
    return { x: x, series: fields.map((f) => ({ label: f.label || f.key, values: rows.map(f.value || ((r) => r[f.key])) })) };
  }

  // Scored candidates per second between consecutive steps.
  function throughput(rows) {
    return rows.map((r, i) => {
      if (i === 0) return r.wall_s > 0 ? r.candidates_total / r.wall_s : null;
      const dt = r.wall_s - rows[i - 1].wall_s;
      return dt > 0 ? (r.candidates_total - rows[i - 1].candidates_total) / dt : null;
    });
  }

  window.CrucibleCharts = { available: typeof window.uPlot === 'function', line: line, bars: bars,
                            series: series, throughput: throughput };
})();
