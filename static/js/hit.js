/* HIT pages: Likert completeness, ordering by drag-and-drop and keyboard, one submit.
   No dependencies besides the vendored SortableJS on the comparison page. The only network
   call is to our own server: the answer is stored first, then the form posts to our server,
   whose answer page posts on to MTurk. */
(function () {
  "use strict";

  // Submitting stores the answer first with a background request; only once the server
  // confirms it does the form post on (the same answer again, which the server recognises)
  // to the page that hands MTurk its copy. If the answer is not stored — the server or its
  // database is down, the connection dropped, the answer was refused — the worker sees why
  // and every rating or ordering stays in the page for another try.
  function onSubmitOnce(form, button) {
    let sent = false;
    let confirmed = false;
    const label = button.textContent;
    const status = document.createElement("p");
    status.id = "submit-status";
    status.className = "submit-status";
    status.setAttribute("role", "alert");
    button.parentNode.insertBefore(status, button);

    function retry(message) {
      sent = false;
      button.disabled = false;
      button.textContent = label;
      status.textContent = message;
      form.dispatchEvent(new Event("change"));
    }

    // A refusal that trying again cannot change (this task was answered in another tab, its
    // time ran out, the session moved on): say so, and offer the way forward — the page as
    // the server sees it now (in a session, its current task), instead of a button that
    // fails again.
    function stale(message) {
      retry("Not saved: " + message);
      button.hidden = true;
      const onward = document.createElement("button");
      onward.type = "button";
      onward.id = "reload-current";
      onward.textContent = "Go to where you are now";
      onward.addEventListener("click", function () {
        forget(form);
        (window.top || window).location.reload();
      });
      status.appendChild(document.createTextNode(" This page is out of date (another tab or window went on). "));
      status.appendChild(onward);
    }

    form.addEventListener("submit", function (event) {
      if (confirmed) return; // the server has the answer: let the form post on
      if (event.defaultPrevented) return; // a preview: nothing to send
      event.preventDefault();
      if (sent) return; // a double click or Enter pressed twice
      sent = true;
      status.textContent = "";
      // performance.now() counts from navigation start: the time the worker had the page.
      form.elements.elapsed_ms.value = String(Math.round(performance.now()));
      button.disabled = true;
      button.textContent = "Submitting…";
      if (!window.fetch) {
        confirmed = true;
        form.submit();
        return;
      }
      fetch(form.action, { method: "POST", body: new FormData(form), headers: { Accept: "application/json" } })
        .then(function (response) {
          return response.json().catch(function () { return {}; }).then(function (body) {
            if (response.ok) {
              confirmed = true;
              forget(form);
              form.submit();
            } else if (STALE.indexOf(response.status) !== -1) {
              stale(body.message || "this task can no longer take this answer (" + response.status + ").");
            } else {
              retry("Not saved: " + (body.message || "the server could not store your answer (" +
                response.status + "). Please try again in a moment."));
            }
          });
        })
        .catch(function () {
          retry("Not saved: the connection to the server failed. Your answers are still here; " +
            "please try again in a moment.");
        });
    });
    return function () { return sent; };
  }

  // Statuses that mean the answer will never be taken from this page: refused (403), gone or
  // not found (404, 410), or in conflict with the answer already stored (409).
  const STALE = [403, 404, 409, 410];

  // A reload mid-task keeps the ratings given: they are kept in this tab's sessionStorage,
  // under the task and assignment, until the answer is stored. Storage may be unavailable
  // (a third-party frame, private mode): then the page works as before.
  function storageKey(form) {
    const assignment = form.elements.assignmentId ? form.elements.assignmentId.value : "";
    return "salience:ratings:" + form.action + ":" + assignment;
  }

  function remember(form) {
    const ratings = {};
    form.querySelectorAll("fieldset.rating input:checked").forEach(function (input) {
      ratings[input.name] = input.value;
    });
    try { window.sessionStorage.setItem(storageKey(form), JSON.stringify(ratings)); } catch (e) { /* no storage */ }
  }

  function restore(form) {
    let ratings = {};
    try { ratings = JSON.parse(window.sessionStorage.getItem(storageKey(form)) || "{}") || {}; } catch (e) { return; }
    Object.keys(ratings).forEach(function (name) {
      const input = form.querySelector('input[type="radio"][name="' + CSS.escape(name) + '"][value="' + CSS.escape(String(ratings[name])) + '"]');
      if (input) input.checked = true;
    });
  }

  function forget(form) {
    try { window.sessionStorage.removeItem(storageKey(form)); } catch (e) { /* no storage */ }
  }

  function likert(form, button, preview) {
    const groups = Array.from(form.querySelectorAll("fieldset.rating"));
    const progress = document.getElementById("progress");
    const sent = onSubmitOnce(form, button);
    if (!preview) {
      restore(form);
      form.addEventListener("change", function () { remember(form); });
    }

    function update() {
      const rated = groups.filter(function (group) {
        const checked = group.querySelector("input:checked") !== null;
        group.classList.toggle("is-rated", checked);
        return checked;
      }).length;
      if (preview) return;
      button.disabled = rated < groups.length || sent();
      progress.textContent = rated === groups.length
        ? "All statements are rated: you can submit."
        : rated + " of " + groups.length + " statements rated.";
    }
    form.addEventListener("change", update);
    update();
  }

  function ranking(form, button, preview) {
    const list = document.getElementById("ranking");
    const announcer = document.getElementById("announcer");
    const order = form.elements.order;
    onSubmitOnce(form, button);
    if (preview) return;

    function items() { return Array.from(list.querySelectorAll(".rank-item")); }

    function changed(item) {
      const all = items();
      order.value = all.map(function (li) { return li.dataset.id; }).join(",");
      const text = item.querySelector(".rank-text").textContent;
      announcer.textContent = "Position " + (all.indexOf(item) + 1) + " of " + all.length + ": " + text;
    }

    // Moves the neighbour rather than `item`, so the focused element never leaves the DOM.
    function move(item, direction, focusTarget) {
      if (direction < 0 && item.previousElementSibling) {
        list.insertBefore(item.previousElementSibling, item.nextElementSibling);
      } else if (direction > 0 && item.nextElementSibling) {
        list.insertBefore(item.nextElementSibling, item);
      } else {
        announcer.textContent = direction < 0 ? "Already at the top." : "Already at the bottom.";
        return;
      }
      changed(item);
      (focusTarget || item).focus();
    }

    list.addEventListener("click", function (event) {
      const control = event.target.closest("button[data-move]");
      if (!control) return;
      move(control.closest(".rank-item"), control.dataset.move === "up" ? -1 : 1, control);
    });
    list.addEventListener("keydown", function (event) {
      if (!event.altKey || (event.key !== "ArrowUp" && event.key !== "ArrowDown")) return;
      const item = event.target.closest(".rank-item");
      if (!item) return;
      event.preventDefault();
      move(item, event.key === "ArrowUp" ? -1 : 1, event.target);
    });

    if (window.Sortable) {
      window.Sortable.create(list, {
        animation: 150,
        // Sortable's own pointer tracking rather than native HTML5 drag-and-drop: the same
        // code path for mouse and touch, and no drag images that a sandboxed frame may block.
        forceFallback: true,
        fallbackTolerance: 4, // pixels: a click on a statement is not a drag
        filter: ".move", // the buttons stay buttons
        preventOnFilter: false,
        delay: 150, // on touch screens a short press starts a drag, a swipe still scrolls
        delayOnTouchOnly: true,
        ghostClass: "is-ghost",
        chosenClass: "is-chosen",
        onEnd: function (event) { changed(event.item); },
      });
    }
  }

  function autoSubmit() {
    const form = document.querySelector("form[data-autosubmit]");
    if (form) form.submit();
  }

  document.addEventListener("DOMContentLoaded", function () {
    autoSubmit();
    const form = document.getElementById("hit-form");
    if (!form) return;
    const button = document.getElementById("submitButton");
    const preview = form.dataset.preview === "true";
    if (preview) {
      // The server refuses a preview too; this spares the worker an error page.
      form.addEventListener("submit", function (event) { event.preventDefault(); });
    }
    if (form.dataset.kind === "likert") likert(form, button, preview);
    else ranking(form, button, preview);
  });
})();
