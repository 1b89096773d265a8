// Starts Swagger UI on the API reference page (/api/docs; served as /api/docs/reference.js):
// the served OpenAPI document, and OAuth's authorization-code flow with PKCE for the
// Authorize dialog, as the client the page names (docs_client_id) if it names one.
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  var ui = window.SwaggerUIBundle({
    url: root.getAttribute("data-document"),
    domNode: root,
    deepLinking: true,
    oauth2RedirectUrl: root.getAttribute("data-redirect"),
  });
  ui.initOAuth({
    clientId: root.getAttribute("data-client-id") || "",
    appName: "medialib API reference",
    scopes: ["read", "write"],
    usePkceWithAuthorizationCodeGrant: true,
  });
  window.ui = ui;
})();
