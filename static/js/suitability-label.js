// Keyboard labelling on the suitability label page: a key names a button (data-key) of the
// form, which is then pressed; nothing happens while the note field has the focus.
(function () {
  "use strict";
  var form = document.getElementById("label-form");
  if (!form) return;
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT")) return;
    var button = form.querySelector('button[data-key="' + event.key.toLowerCase() + '"]');
    if (!button) return;
    event.preventDefault();
    button.click();
  });
  form.dataset.keys = "ready"; // the keys work from here on (tests wait for it)
})();
