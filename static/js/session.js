// The page a session's task posts its answer to, shown inside the session's frame:
// move the whole window on to the next task (same origin, so the top may be navigated).
(function () {
  "use strict";
  var next = document.getElementById("session-next");
  if (!next) { return; }
  var target = next.getAttribute("data-next");
  (window.top || window).location.assign(target);
})();
