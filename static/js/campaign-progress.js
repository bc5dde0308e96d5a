/* Live figures on a campaign page. Every 10 s it reads the campaign's progress.json (the
   figures the page was rendered from, for the same page of topics: the element #live-status
   names the address) and updates the meters, the topics' state badges and the money in
   place. What the page has no place for — a topic's first published batch, a new batch, a
   topic moving on — is not redrawn under the reader's hands: a link offers the reload.
   It waits while the tab is hidden and stops after three failed reads in a row (a lost
   login, a stopped server). No dependencies, no inline script (the CSP forbids it). */
(function () {
  "use strict";

  var INTERVAL_MS = 10000;
  var MAX_FAILURES = 3;
  var status = document.getElementById("live-status");
  if (!status || !window.fetch) return;
  var source = status.dataset.progressUrl;
  var failures = 0;
  var timer = null;
  var reading = false;
  var hint = null;

  function meterOf(topicId, name) {
    var label = document.getElementById("meter-" + topicId + "-" + name);
    return label ? label.closest(".meter") : null;
  }

  function meterSet(meter, figures) {
    var bar = meter.querySelector("progress");
    bar.max = figures.total || 1;
    bar.value = figures.done;
    bar.textContent = figures.percent + " %";
    meter.querySelector(".done").textContent = figures.done;
    meter.querySelector(".total").textContent = figures.total;
  }

  /* True when the topic's card still shows the right parts (only its numbers are stale). */
  function topicUpdate(topic) {
    var card = document.querySelector('article[data-topic="' + topic.id + '"]');
    if (!card) return true; /* not on this page */
    var current = topic.current_batch === null ? "" : String(topic.current_batch);
    var same = card.dataset.state === topic.state && card.dataset.batch === current;
    var badge = card.querySelector(".topic-head .badge");
    if (badge && badge.textContent !== topic.state_label) badge.textContent = topic.state_label;
    Object.keys(topic.meters).forEach(function (name) {
      var meter = meterOf(topic.id, name);
      if (meter) {
        meterSet(meter, topic.meters[name]);
      } else if (topic.meters[name].total > 0) {
        same = false; /* published since the page was drawn: it has no meters yet */
      }
    });
    return same;
  }

  function moneyUpdate(money) {
    Object.keys(money).forEach(function (name) {
      var cell = document.querySelector('[data-money="' + name + '"]');
      if (cell) cell.textContent = money[name];
    });
  }

  function reloadOffer() {
    if (hint) return;
    hint = document.createElement("p");
    hint.className = "notice";
    hint.setAttribute("role", "status");
    hint.appendChild(document.createTextNode("The campaign has moved on since this page was drawn. "));
    var link = document.createElement("a");
    link.href = status.dataset.reloadUrl || window.location.href;
    link.textContent = "Reload the page";
    hint.appendChild(link);
    hint.appendChild(document.createTextNode(" to see its new batches and actions."));
    status.parentNode.insertBefore(hint, status.nextSibling);
  }

  function shown(data) {
    moneyUpdate(data.money);
    var same = data.topics.map(topicUpdate).every(Boolean);
    if (!same) reloadOffer();
    var at = new Date(data.read_at);
    status.textContent = "Figures read at " + at.toLocaleTimeString() + "; they update every 10 s.";
  }

  function read() {
    timer = null;
    if (document.hidden || reading) return; /* visibilitychange reads again */
    reading = true;
    fetch(source, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok || response.redirected) throw new Error("status " + response.status);
        return response.json();
      })
      .then(function (data) {
        reading = false;
        failures = 0;
        shown(data);
        schedule();
      })
      .catch(function () {
        reading = false;
        failures += 1;
        if (failures >= MAX_FAILURES) {
          status.textContent = "The figures stopped updating: reload the page to see the latest.";
          return;
        }
        schedule();
      });
  }

  function schedule() {
    if (timer === null) timer = window.setTimeout(read, INTERVAL_MS);
  }

  status.textContent = "The figures below update every 10 s without a reload.";
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && timer === null && failures < MAX_FAILURES) read();
  });
  schedule();
})();
