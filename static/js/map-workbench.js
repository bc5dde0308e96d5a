/* The concept-map workbench: draws the map's state (from the page, then from each answer of the
   server), sends one change at a time with the version it was made on, and shows the server's
   answer. The server checks every constraint; this page mirrors the checks only to say early
   what would be refused. Text reaches the page through textContent only. */
(function () {
  "use strict";
  var root = document.getElementById("workbench");
  if (!root) { return; }
  var state = JSON.parse(document.getElementById("map-state").textContent);
  var graph = null;
  var lastActivity = Date.now();
  var lastBeat = Date.now();
  var busy = false;

  function el(tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = text; }
    if (className) { node.className = className; }
    return node;
  }

  function say(text, kind) {
    var message = document.getElementById("message");
    message.textContent = text;
    message.className = "message" + (kind ? " " + kind : "");
  }

  function conceptLabel(id) {
    for (var i = 0; i < state.concepts.length; i++) {
      if (state.concepts[i].id === id) { return state.concepts[i].label; }
    }
    return "?";
  }

  /* The page's mirror of the checker: connected, one relation per pair, synthetic count. */
  function mirror() {
    var neighbours = {};
    var pairs = {};
    var duplicates = 0;
    state.concepts.forEach(function (c) { neighbours[c.id] = []; });
    state.relations.forEach(function (r) {
      neighbours[r.source].push(r.target);
      neighbours[r.target].push(r.source);
      var key = Math.min(r.source, r.target) + "-" + Math.max(r.source, r.target);
      if (pairs[key]) { duplicates += 1; }
      pairs[key] = true;
    });
    var ids = Object.keys(neighbours);
    var seen = {};
    if (ids.length) {
      var stack = [Number(ids[0])];
      seen[ids[0]] = true;
      while (stack.length) {
        neighbours[stack.pop()].forEach(function (n) {
          if (!seen[n]) { seen[n] = true; stack.push(n); }
        });
      }
    }
    var problems = [];
    var counters = state.counters;
    if (state.concepts.length !== counters.target) { problems.push(state.concepts.length + " concepts, the target is " + counters.target); }
    if (Object.keys(seen).length !== ids.length || !ids.length) { problems.push("the map is not connected"); }
    if (duplicates) { problems.push(duplicates + " pairs of concepts with more than one relation"); }
    var synthetic = state.relations.filter(function (r) { return r.synthetic; }).length;
    if (synthetic > counters.max_synthetic) { problems.push(synthetic + " synthetic relations, at most " + counters.max_synthetic); }
    return problems;
  }

  function option(select, value, text) {
    var o = el("option", text);
    o.value = value;
    select.appendChild(o);
  }

  function fillConcepts(select, keep) {
    var previous = keep ? select.value : "";
    select.textContent = "";
    state.concepts.forEach(function (c) { option(select, c.id, c.label); });
    if (previous) { select.value = previous; }
  }

  function fillLabels() {
    var labels = [];
    [document.getElementById("merge-keep").value, document.getElementById("merge-other").value].forEach(function (id) {
      state.concepts.forEach(function (c) {
        if (String(c.id) === id) {
          c.merged_from.forEach(function (l) { if (labels.indexOf(l) < 0) { labels.push(l); } });
        }
      });
    });
    var select = document.getElementById("merge-label");
    select.textContent = "";
    labels.forEach(function (l) { option(select, l, l); });
  }

  function drawList() {
    var list = document.getElementById("proposition-list");
    list.textContent = "";
    state.propositions.forEach(function (p) {
      var item = el("li", null, p.included ? "included" : "");
      item.id = "proposition-" + p.id;
      if (state.next === p.id) { item.classList.add("next"); }
      var text = el("span", p.subject + " — " + p.relation + " — " + p.object, "text");
      var meta = el("span", "#" + p.position + (p.crowd_rank ? " (crowd " + p.crowd_rank + ")" : "") + (p.operation !== "kept" ? " · " + p.operation.replace("_", " ") : ""), "muted rank");
      item.appendChild(meta);
      item.appendChild(text);
      if (state.editable && state.status === "draft") {
        var button = el("button", p.included ? "Remove" : "Add", "small");
        button.type = "button";
        button.setAttribute("aria-label", (p.included ? "Remove: " : "Add: ") + p.subject + " " + p.relation + " " + p.object);
        button.addEventListener("click", function () {
          if (p.included) {
            var relation = state.relations.filter(function (r) { return r.proposition === p.id; })[0];
            if (relation) { act({ action: "remove", relation_id: relation.id }); }
          } else {
            act({ action: "include", proposition_id: p.id });
          }
        });
        item.appendChild(button);
      }
      list.appendChild(item);
    });
  }

  function drawConcepts() {
    var concepts = document.getElementById("concept-list");
    concepts.textContent = "";
    state.concepts.forEach(function (c) {
      var item = el("li", c.label);
      item.dataset.concept = c.id;
      if (c.merged_from.length > 1) { item.appendChild(el("span", " (merged: " + c.merged_from.join(" | ") + ")", "muted")); }
      concepts.appendChild(item);
    });
    var relations = document.getElementById("relation-list");
    relations.textContent = "";
    state.relations.forEach(function (r) {
      var item = el("li", conceptLabel(r.source) + " — " + r.label + " — " + conceptLabel(r.target));
      if (r.synthetic) {
        item.appendChild(el("span", " synthetic", "badge warn"));
        if (state.editable && state.status === "draft") {
          var button = el("button", "Remove", "small");
          button.type = "button";
          button.addEventListener("click", function () { act({ action: "remove", relation_id: r.id }); });
          item.appendChild(button);
        }
      }
      relations.appendChild(item);
    });
    var suggestions = document.getElementById("suggestions");
    suggestions.textContent = "";
    state.suggestions.forEach(function (s) {
      var item = el("li");
      var button = el("button", "Merge? " + conceptLabel(s.a) + " + " + conceptLabel(s.b), "small link");
      button.type = "button";
      button.addEventListener("click", function () {
        document.getElementById("merge-keep").value = String(s.a);
        document.getElementById("merge-other").value = String(s.b);
        fillLabels();
        document.getElementById("merge-label").focus();
      });
      item.appendChild(button);
      item.appendChild(el("span", " " + s.why, "muted"));
      suggestions.appendChild(item);
    });
  }

  function drawGraph() {
    if (typeof window.cytoscape !== "function") { return; }
    var elements = state.concepts.map(function (c) { return { data: { id: "c" + c.id, label: c.label } }; });
    state.relations.forEach(function (r) {
      elements.push({ data: { id: "r" + r.id, source: "c" + r.source, target: "c" + r.target, label: r.label, synthetic: r.synthetic ? 1 : 0 } });
    });
    if (graph) { graph.destroy(); }
    graph = window.cytoscape({
      container: document.getElementById("graph"),
      elements: elements,
      wheelSensitivity: 0.3,
      style: [
        { selector: "node", style: { label: "data(label)", "text-wrap": "wrap", "text-max-width": "110px", "font-size": "11px", "background-color": "#2456a6", width: 14, height: 14, "text-valign": "bottom", color: "#1d2430" } },
        { selector: "edge", style: { label: "data(label)", "font-size": "9px", color: "#5a6474", "curve-style": "bezier", "target-arrow-shape": "triangle", width: 1.5, "line-color": "#9aa3b0", "target-arrow-color": "#9aa3b0", "text-rotation": "autorotate" } },
        { selector: "edge[synthetic = 1]", style: { "line-style": "dashed", "line-color": "#9a5b00", "target-arrow-color": "#9a5b00" } },
        { selector: "node:selected", style: { "background-color": "#b42318" } }
      ],
      layout: { name: elements.length > 1 ? "cose" : "grid", animate: false, randomize: false, padding: 20 }
    });
    graph.on("tap", "node", function (event) {
      var id = event.target.id().slice(1);
      var keep = document.getElementById("merge-keep");
      var other = document.getElementById("merge-other");
      if (keep.value === id) { return; }
      other.value = keep.value;
      keep.value = id;
      fillLabels();
    });
  }

  function draw() {
    var c = state.counters;
    document.getElementById("count-concepts").textContent = c.concepts;
    document.getElementById("count-target").textContent = c.target;
    document.getElementById("count-relations").textContent = c.relations;
    document.getElementById("count-connected").textContent = c.connected ? "yes" : "no";
    document.getElementById("count-synthetic").textContent = c.synthetic;
    document.getElementById("active-time").textContent = state.active_seconds + " s";
    document.getElementById("save-state").textContent = "version " + state.version;
    document.getElementById("map-status").textContent = state.status === "final" ? "Final" : "Draft";
    var problems = mirror();
    document.getElementById("constraints").textContent = problems.length ? "Before it can be final: " + problems.join("; ") + "." : "Every constraint holds: the map can be marked final.";
    var editing = state.editable && state.status === "draft";
    root.querySelectorAll("[data-editor]").forEach(function (node) {
      node.hidden = !state.editable;
      node.querySelectorAll("button, select, input").forEach(function (control) { control.disabled = !editing; });
      if (node.tagName === "BUTTON") { node.disabled = !editing; }
    });
    document.getElementById("finalise").disabled = !editing || problems.length > 0;
    document.getElementById("reopen").hidden = !state.editable || state.status !== "final";
    document.getElementById("reopen").disabled = !state.editable || state.status !== "final";
    document.getElementById("next-connecting").disabled = !editing || !state.next;
    ["merge-keep", "synthetic-source", "synthetic-target"].forEach(function (id) { fillConcepts(document.getElementById(id), true); });
    var other = document.getElementById("merge-other");
    fillConcepts(other, true);
    if (other.value === document.getElementById("merge-keep").value && state.concepts.length > 1) { other.selectedIndex = 1; }
    fillLabels();
    drawList();
    drawConcepts();
    drawGraph();
  }

  function send(url, body) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": root.dataset.csrf },
      body: JSON.stringify(body)
    });
  }

  function act(change) {
    if (busy) { return; }
    busy = true;
    lastActivity = Date.now();
    change.version = state.version;
    document.getElementById("save-state").textContent = "saving…";
    say("Saving…", "");
    send(root.dataset.act, change).then(function (response) {
      return response.json().then(function (body) { return { ok: response.ok, status: response.status, body: body }; });
    }).then(function (answer) {
      busy = false;
      if (answer.ok) {
        state = answer.body;
        draw();
        say("Saved.", "ok");
      } else {
        document.getElementById("save-state").textContent = "version " + state.version + " (not saved)";
        say(answer.body.message || "Refused.", answer.status === 409 ? "bad conflict" : "bad");
      }
    }).catch(function () {
      busy = false;
      document.getElementById("save-state").textContent = "not saved";
      say("The server could not be reached: nothing was saved. Try again.", "bad");
    });
  }

  function reload() {
    fetch(root.dataset.state, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (body) {
      state = body;
      draw();
      say("Reloaded: version " + state.version + ".", "ok");
    });
  }

  function heartbeat() {
    var now = Date.now();
    var active = now - lastActivity < 60000 && document.visibilityState === "visible";
    var seconds = active ? Math.round((now - lastBeat) / 1000) : 0;
    lastBeat = now;
    if (!state.editable || seconds <= 0) { return; }
    send(root.dataset.heartbeat, { seconds: seconds }).then(function (r) { return r.json(); }).then(function (body) {
      if (body.active_seconds !== undefined) {
        state.active_seconds = body.active_seconds;
        document.getElementById("active-time").textContent = body.active_seconds + " s";
      }
    }).catch(function () { /* the next heartbeat counts again */ });
  }

  document.getElementById("merge-keep").addEventListener("change", fillLabels);
  document.getElementById("merge-other").addEventListener("change", fillLabels);
  document.getElementById("merge-form").addEventListener("submit", function (event) {
    event.preventDefault();
    act({
      action: "merge",
      keep_id: Number(document.getElementById("merge-keep").value),
      merge_id: Number(document.getElementById("merge-other").value),
      label: document.getElementById("merge-label").value
    });
  });
  document.getElementById("synthetic-form").addEventListener("submit", function (event) {
    event.preventDefault();
    act({
      action: "synthetic",
      source_id: Number(document.getElementById("synthetic-source").value),
      target_id: Number(document.getElementById("synthetic-target").value),
      label: document.getElementById("synthetic-label").value
    });
  });
  document.getElementById("next-connecting").addEventListener("click", function () {
    if (state.next) { act({ action: "include", proposition_id: state.next }); }
  });
  document.getElementById("finalise").addEventListener("click", function () { act({ action: "finalise" }); });
  document.getElementById("reopen").addEventListener("click", function () { act({ action: "reopen" }); });
  document.getElementById("reload").addEventListener("click", reload);
  ["keydown", "pointerdown", "pointermove", "focusin"].forEach(function (name) {
    document.addEventListener(name, function () { lastActivity = Date.now(); }, { passive: true });
  });
  window.addEventListener("resize", function () {
    if (graph) { graph.resize(); graph.fit(undefined, 20); }
  });
  document.addEventListener("visibilitychange", heartbeat);
  window.setInterval(heartbeat, 30000);
  draw();
}());
