/* The Channel page's "New links" form: its labels name personal links only, so while another
   kind is chosen the field is hidden and left out of the post (the server ignores labels for
   an open link anyway: dashboard.channel_forms.LinksForm). Without this script the field stays in view.
   No dependencies, no inline script (the CSP forbids it). */
(function () {
  "use strict";

  var form = document.querySelector("form[data-links-form]");
  if (!form) return;
  var kind = form.elements.namedItem("kind");
  var group = form.querySelector("[data-shown-for-kind]");
  if (!kind || !group) return;
  var fields = group.querySelectorAll("textarea, input");

  function update() {
    var shown = kind.value === group.dataset.shownForKind;
    group.hidden = !shown;
    fields.forEach(function (field) {
      field.disabled = !shown;
    });
  }

  kind.addEventListener("change", update);
  update();
})();
