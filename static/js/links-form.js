/* The Channel page's "New links" form: its labels name personal links only and its codes are
   an open link's, so the fields of the kind not chosen are hidden and left out of the post (the
   server ignores them anyway: dashboard.channel_forms.LinksForm). Without this script the field stays in view.
   No dependencies, no inline script (the CSP forbids it). */
(function () {
  "use strict";

  var form = document.querySelector("form[data-links-form]");
  if (!form) return;
  var kind = form.elements.namedItem("kind");
  var groups = form.querySelectorAll("[data-shown-for-kind]");
  if (!kind || !groups.length) return;

  function update() {
    groups.forEach(function (group) {
      var shown = kind.value === group.dataset.shownForKind;
      group.hidden = !shown;
      group.querySelectorAll("textarea, input").forEach(function (field) {
        field.disabled = !shown;
      });
    });
  }

  kind.addEventListener("change", update);
  update();
})();
