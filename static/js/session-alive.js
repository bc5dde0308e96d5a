// The session page's heartbeat: while the page is open, tell the server every few minutes so
// the task in hand keeps its place (a participant link releases an idle session's place).
(function () {
  "use strict";
  var marker = document.getElementById("session-alive");
  if (!marker) { return; }
  var url = marker.getAttribute("data-url");
  var seconds = parseInt(marker.getAttribute("data-seconds"), 10) || 120;
  var timer = window.setInterval(function () {
    fetch(url, { method: "POST", credentials: "same-origin" }).then(function (response) {
      if (response.status === 410) {
        // The place is gone (released for idleness or by the researcher): say so before more is typed.
        window.clearInterval(timer);
        var notice = document.getElementById("session-released");
        if (notice) { notice.hidden = false; }
      }
    }).catch(function () { /* offline for a moment: the next beat tries again */ });
  }, seconds * 1000);
})();
