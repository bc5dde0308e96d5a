// Starts Swagger UI on /api/docs/ with the schema from the element's data-schema-url.
// Kept out of the page so a Content-Security-Policy needs no 'unsafe-inline' for scripts.
// "Authorize" takes `Token <key>` (a key from POST /api/auth/token/); the validator badge is
// off so the page never calls a host other than this one.
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.dataset.schemaUrl,
    domNode: root,
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    validatorUrl: null,
  });
})();
