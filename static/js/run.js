// The live run page. Everything on it is built from the run's stored event sequence, which
// the websocket replays from the start (or from the last event seen, after a reconnect) and
// then streams: a page opened mid-run and a page open from the start show the same thing.
(function () {
  "use strict";
  var root = document.getElementById("run");
  var runId = root.dataset.runId;
  var budget = parseInt(root.dataset.budget, 10) || 1;
  var baselines = JSON.parse(document.getElementById("run-baselines").textContent);
  var S = window.int21Run = {lastSeq: 0, received: 0, duplicates: 0, outOfOrder: 0, evaluated: 0,
                             rows: {}, lessons: {}, order: [], speed: {}, best: {}, bestSeries: {}, gens: {}, agents: {}, payoff: {}, llm: {}, state: null};
  baselines.forEach(function (b) { S.bestSeries[b] = {x: [], y: []}; });
  var tbody = document.querySelector("#candidates tbody");
  var dirty = false, ws = null, backoff = 250;

  function text(el, value) { var n = document.getElementById(el); if (n) n.textContent = value; }
  function fmt(x, d) { return (x === null || x === undefined) ? "—" : Number(x).toFixed(d); }
  function params(p) { return Object.keys(p).sort().map(function (k) { return k + "=" + p[k]; }).join(" "); }
  function activity(line) {
    var ul = document.getElementById("activity"), li = document.createElement("li");
    li.textContent = line; ul.insertBefore(li, ul.firstChild);
    while (ul.children.length > 30) ul.removeChild(ul.lastChild);
  }
  var ENDED = {finished: 1, failed: 1};
  function setState(state) {
    S.state = state;
    var b = document.getElementById("run-state"); b.textContent = state; b.className = "badge " + state;
    // only the controls that apply to this state are shown (data-when: the states they apply to)
    document.querySelectorAll("#run [data-when]").forEach(function (el) {
      el.hidden = el.dataset.when.split(" ").indexOf(state) < 0;
    });
    if (ENDED[state]) {   // nothing more will apply: no live link, no message about a form that is gone
      text("live-status", "ended");
      var result = document.getElementById("guidance-result");
      if (result) result.textContent = "";
    }
  }
  // Best so far against each baseline, in evaluation order, from each candidate's current
  // speedups: its first measurement, replaced by the medians once it is confirmed (the header's
  // number), so the chart and the header never tell two stories.
  function bestSoFar() {
    var best = {};
    baselines.forEach(function (b) { S.bestSeries[b] = {x: [], y: []}; });
    S.order.forEach(function (cid, i) {
      var sp = S.speed[cid];
      baselines.forEach(function (b) {
        var v = sp && sp[b];
        if (v !== undefined && (best[b] === undefined || v > best[b])) best[b] = v;
        if (best[b] !== undefined) { S.bestSeries[b].x.push(i + 1); S.bestSeries[b].y.push(best[b]); }
      });
    });
    S.best = best; dirty = true;
  }
  function spread(measurements) {
    if (!measurements || measurements.length < 2) return "(one measurement)";
    return "(" + fmt(Math.min.apply(null, measurements), 2) + "–" + fmt(Math.max.apply(null, measurements), 2) +
      ", median of " + measurements.length + ")";
  }
  function gen(g) { return S.gens[g] || (S.gens[g] = {proposed: 0, ok: 0, failed: 0}); }

  function row(d) {
    var tr = document.createElement("tr");
    tr.id = "cand-" + d.candidate_id; tr.className = "new"; tr.dataset.status = "in flight";
    var parent = (d.parents && d.parents.length) ? '<a href="/candidates/' + d.parents[0] + '/">#' + d.parents[0] + "</a>" : "—";
    tr.innerHTML = '<td><a href="/candidates/' + d.candidate_id + '/">#' + d.candidate_id + "</a></td><td>" + d.generation +
      "</td><td>" + d.agent + "</td><td><code></code></td><td>" + parent + '</td><td><span class="badge queued">in flight</span></td>' +
      '<td class="num">—</td><td class="num">—</td><td class="muted"></td>';
    tr.children[3].firstChild.textContent = params(d.params);
    tr.children[8].textContent = d.rationale;
    tbody.insertBefore(tr, tbody.firstChild);
    S.rows[d.candidate_id] = tr;
    text("candidate-count", "(" + Object.keys(S.rows).length + ")");
  }

  var handlers = {
    run_started: function (d) { setState("running"); activity("run started with " + d.team.join(", ")); },
    run_paused: function (d) { setState("paused"); activity(d.reason); },
    run_resumed: function (d) { setState("running"); activity(d.reason); },
    generation_started: function (d) {
      gen(d.generation); S.agents[d.generation] = d.allocation; dirty = true;
      activity("generation " + d.generation + " started");
    },
    generation_finished: function (d) { S.agents[d.generation] = d.allocation; S.payoff[d.generation] = d.summary.payoff || {}; dirty = true; },
    candidate_proposed: function (d) { row(d); gen(d.generation).proposed += 1; dirty = true; },
    candidate_evaluated: function (d) {
      var tr = S.rows[d.candidate_id];
      if (!tr) { row({candidate_id: d.candidate_id, generation: d.generation, agent: d.agent, params: {}, parents: [], rationale: ""}); tr = S.rows[d.candidate_id]; gen(d.generation).proposed += 1; }
      S.evaluated += 1;
      var ok = d.status === "ok";
      gen(d.generation)[ok ? "ok" : "failed"] += 1;
      tr.dataset.status = d.status;
      tr.children[5].innerHTML = '<span class="badge ' + (ok ? "ok" : d.status) + '"></span>';
      tr.children[5].firstChild.textContent = d.status + (d.cached ? " (cached)" : "") + (d.retry ? " (retried)" : "");
      if (!ok) tr.children[5].title = d.reason;
      tr.children[6].textContent = ok ? fmt(d.score, 2) + "×" : "—";
      tr.children[7].textContent = fmt(d.median_ms, 3);
      S.order.push(d.candidate_id);
      if (ok && d.speedup) S.speed[d.candidate_id] = d.speedup;
      bestSoFar();
      text("run-progress", S.evaluated + "/" + budget + " evaluations");
      document.getElementById("run-progress-bar").style.width = Math.min(100, 100 * S.evaluated / budget) + "%";
      dirty = true;
    },
    candidate_confirmed: function (d) {
      var tr = S.rows[d.candidate_id], all = d.measurements.map(function (x) { return fmt(x, 2); }).join(", ");
      if (tr) { tr.children[6].textContent = fmt(d.score, 2) + "×"; tr.children[6].title = "median of " + d.measurements.length + " measurements: " + all; }
      if (d.speedup) { S.speed[d.candidate_id] = d.speedup; bestSoFar(); }
      activity("confirmed #" + d.candidate_id + ": " + all + " → median " + fmt(d.score, 2) + "×");
    },
    run_finished: function (d) {
      setState("finished"); text("run-reason", "— " + d.reason); activity("finished: " + d.reason);
      if (d.best) { text("run-best", fmt(d.best.score, 2) + "×"); text("run-spread", spread(d.best.measurements)); }
    },
    run_failed: function (d) { setState("failed"); text("run-reason", "— " + d.reason); activity("failed: " + d.reason); },
    new_best: function (d) { text("run-best", fmt(d.score, 2) + "×"); text("run-spread", spread(null)); activity("new best #" + d.candidate_id + ": " + fmt(d.score, 2) + "×"); },
    guidance_applied: function (d) {
      var ul = document.getElementById("guidance-history");
      if (!ul.querySelector('[data-guidance="' + d.guidance_id + '"]')) {   // the markup of _guidance_item.html
        var li = document.createElement("li"), who = document.createElement("strong"), code = document.createElement("code");
        li.dataset.guidance = d.guidance_id; who.textContent = d.author; code.textContent = JSON.stringify(d.directive);
        li.appendChild(who); li.appendChild(document.createTextNode(": ")); li.appendChild(code); ul.appendChild(li);
      }
      var li2 = ul.querySelector('[data-guidance="' + d.guidance_id + '"]');
      if (d.effect) { var s = document.createElement("span"); s.className = "ok applied"; s.textContent = " → applied: " + d.effect; li2.appendChild(s); }
      activity("guidance from " + d.author + ": " + (d.effect || "applied"));
    },
    lesson_recorded: function (d) {
      // a lesson on the same subject replaces the earlier one (the store keeps one per subject)
      var key = d.kind + " " + (d.subject || d.text), ul = document.getElementById("lessons");
      var li = S.lessons[key];
      if (!li) { li = S.lessons[key] = document.createElement("li"); ul.appendChild(li); }
      li.textContent = d.text;
    },
    agent_note: function (d) { activity(d.agent + ": " + d.text); },
    // language models: spend per agent, unusable answers (raw, shown as text), the budget pause
    llm_call: function (d) {
      var a = S.llm[d.agent] || (S.llm[d.agent] = {requests: 0, failed: 0, tin: 0, tout: 0, cost: 0, ms: 0});
      a.requests += 1; a.failed += d.ok ? 0 : 1; a.tin += d.tokens_in || 0; a.tout += d.tokens_out || 0;
      a.cost += d.cost || 0; a.ms += d.latency_ms || 0;
      var body = document.querySelector("#llm-spend tbody");
      if (!body) return;
      body.innerHTML = "";
      Object.keys(S.llm).sort().forEach(function (name) {
        var r = S.llm[name], tr = document.createElement("tr");
        [name, r.requests, r.failed, r.tin, r.tout, r.cost ? r.cost.toFixed(4) : "—", (r.ms / r.requests).toFixed(0)]
          .forEach(function (v, i) { var td = document.createElement("td"); td.textContent = v; if (i) td.className = "num"; tr.appendChild(td); });
        body.appendChild(tr);
      });
    },
    llm_proposal_failed: function (d) {
      var ul = document.getElementById("llm-failures");
      if (!ul) return;
      var li = document.createElement("li"), pre = document.createElement("pre");
      li.textContent = d.agent + ": " + d.reason; pre.textContent = d.answer; li.appendChild(pre);
      ul.insertBefore(li, ul.firstChild);
      text("llm-failure-count", ul.children.length);
    },
    llm_paused: function (d) { text("llm-paused", "LLM agents paused: " + d.reason + " (the run carries on)"); activity("LLM agents paused: " + d.reason); },
  };

  function draw() {
    if (!dirty || !window.Plotly) return;
    dirty = false;
    var layout = {margin: {l: 45, r: 10, t: 10, b: 40}, height: 300, legend: {orientation: "h"}};
    Plotly.react("chart-best", baselines.map(function (b) {
      // copies: Plotly.react redraws only data it has not seen (arrays compared by identity)
      return {x: S.bestSeries[b].x.slice(), y: S.bestSeries[b].y.slice(), name: "vs " + b, mode: "lines+markers",
              line: {shape: "hv"}};
    }), Object.assign({}, layout, {xaxis: {title: {text: "evaluations"}}, yaxis: {title: {text: "speedup ×"}}}));
    var gs = Object.keys(S.gens).map(Number).sort(function (a, b) { return a - b; });
    var pending = gs.map(function (g) { var s = S.gens[g]; return Math.max(0, s.proposed - s.ok - s.failed); });
    Plotly.react("chart-generations", [
      {x: gs, y: gs.map(function (g) { return S.gens[g].ok; }), name: "passed", type: "bar", marker: {color: "#3fb950"}},
      {x: gs, y: gs.map(function (g) { return S.gens[g].failed; }), name: "rejected", type: "bar", marker: {color: "#f47067"}},
      {x: gs, y: pending, name: "in flight", type: "bar", marker: {color: "#d4a72c"}}],
      Object.assign({}, layout, {barmode: "stack", xaxis: {title: {text: "generation"}, dtick: 1}}));
    var names = {};
    Object.keys(S.agents).forEach(function (g) { Object.keys(S.agents[g]).forEach(function (a) { names[a] = 1; }); });
    var ag = Object.keys(S.agents).map(Number).sort(function (a, b) { return a - b; });
    var traces = Object.keys(names).map(function (a) {
      return {x: ag, y: ag.map(function (g) { return S.agents[g][a] || 0; }), name: a, type: "bar"};
    });
    var pg = Object.keys(S.payoff).map(Number).sort(function (a, b) { return a - b; });
    Object.keys(names).forEach(function (a) {
      traces.push({x: pg, y: pg.map(function (g) { return S.payoff[g][a] || 0; }), name: a + " payoff", yaxis: "y2",
                   mode: "lines", line: {dash: "dot"}, showlegend: false});
    });
    Plotly.react("chart-agents", traces, Object.assign({}, layout, {barmode: "stack",
      xaxis: {title: {text: "generation"}, dtick: 1}, yaxis: {title: {text: "slots"}},
      yaxis2: {overlaying: "y", side: "right", title: {text: "payoff"}}}));
  }
  setInterval(draw, 250);

  // Whether a live worker serves the run's target (the consumer says so when it changes): with
  // none, the page says the run waits, never that it is live and progressing.
  S.workers = null;
  function showWorkers(w) {
    S.workers = w;
    var banner = document.getElementById("no-worker");
    if (banner) {
      banner.hidden = w.live || !!ENDED[S.state];
      var why = document.getElementById("no-worker-reason");
      if (why) why.textContent = w.reason;
    }
    if (!ENDED[S.state]) text("live-status", w.live ? "live" : "waiting: no live worker");
  }

  function connect() {
    var url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws/runs/" + runId + "/?workers=1&after=" + S.lastSeq;
    ws = new WebSocket(url);
    ws.onopen = function () {
      backoff = 250;
      text("live-status", ENDED[S.state] ? "ended" : (S.workers && !S.workers.live ? "waiting: no live worker" : "live"));
    };
    ws.onmessage = function (e) {
      var msg = JSON.parse(e.data);
      if (msg.error) { activity(msg.error); return; }
      if (msg.workers) { showWorkers(msg.workers); return; }
      S.received += 1;
      if (msg.seq <= S.lastSeq) { S.duplicates += 1; return; }
      if (msg.seq !== S.lastSeq + 1) S.outOfOrder += 1;
      S.lastSeq = msg.seq;
      var h = handlers[msg.kind];
      if (h) h(msg.data);
    };
    ws.onclose = function (e) {
      if (e.code === 4401 || e.code === 4403 || e.code === 4404) { text("live-status", "not allowed to watch this run"); return; }
      text("live-status", "reconnecting…");
      setTimeout(connect, backoff); backoff = Math.min(backoff * 2, 5000);
    };
  }
  S.reconnect = function () { if (ws) ws.close(); };   // used by tests: drop and come back
  connect();
})();
