// The API reference page in a real browser (Debian's Chromium, driven by playwright-core):
// /api/docs shows every operation of the served OpenAPI document; its Authorize dialog signs
// in with the authorization-code flow and PKCE (the public client the page names; the
// popup's sign-in and consent pages filled as a person would), and "Try it out" then calls
// GET /api/authenticate with the token it got. Screenshots kept.
// Run by tests/integration/reference.rs.
//
//   node api_docs.mjs --base URL --username U --password P --client-id ID --screenshots DIR
//
// The client id is typed in only when the page names none (`docs_client_id` unset).
//
// Prints one JSON line: {"operations": N in the document, "shown": N on the page,
// "clientId": the prefilled client id, "status": the call's status, "body": its body,
// "consoleErrors": [...]}; on a failure {"error": ..., "at": page URL} and exit 1.

import { join } from "node:path";
import { audit, collectErrors, deadline, emit, launch, requiredOptions } from "./chromium.mjs";

const opts = requiredOptions("api_docs.mjs", [
  "base",
  "username",
  "password",
  "client-id",
  "screenshots",
]);
deadline(80_000);

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

let browser;
let page;
const errors = [];
try {
  browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  page.setDefaultTimeout(30_000);
  collectErrors(page, errors);
  const base = opts.base.replace(/\/$/, "");
  const documentAnswer = await fetch(`${base}/api/openapi.json`);
  const document = await documentAnswer.json();
  let operations = 0;
  for (const item of Object.values(document.paths)) {
    operations += METHODS.filter((m) => item[m]).length;
  }

  await page.goto(`${base}/api/docs`);
  await page.locator(".opblock").first().waitFor();
  const shown = await page.locator(".opblock").count();
  await page.screenshot({ path: join(opts.screenshots, "api-docs.png") });
  const violations = await audit(page, "api-docs");

  // Authorize: the oauth2 scheme, its client id filled in by the page, both scopes.
  await page.locator(".auth-wrapper button.authorize").click();
  const dialog = page.locator(".modal-ux");
  await dialog.waitFor();
  const clientInput = dialog.locator("input[id^=client_id_]");
  const clientId = await clientInput.inputValue();
  if (!clientId) await clientInput.fill(opts["client-id"]);
  await dialog.getByText("select all").click();
  await page.screenshot({ path: join(opts.screenshots, "api-docs-authorize.png") });
  // The oauth2 scheme's part of the dialog (the other is bearer's).
  const oauth2 = dialog.locator(".auth-container", { hasText: "authorizationCode" });
  const [popup] = await Promise.all([
    context.waitForEvent("page"),
    oauth2.locator("button.authorize").click(),
  ]);
  await popup.getByLabel("Username").fill(opts.username);
  await popup.getByLabel("Password").fill(opts.password);
  violations.push(...(await audit(popup, "authorize-sign-in")));
  await popup.getByRole("button", { name: "Sign in" }).click();
  await popup.getByRole("button", { name: "Approve" }).waitFor();
  violations.push(...(await audit(popup, "consent")));
  // The popup closes itself once it handed the code over, perhaps before the click returns.
  const closed = popup.waitForEvent("close");
  await popup
    .getByRole("button", { name: "Approve" })
    .click()
    .catch((e) => {
      if (!popup.isClosed()) throw e;
    });
  await closed;
  await oauth2.locator("button", { hasText: "Logout" }).waitFor();
  await oauth2.locator("button.btn-done").click();

  // Try it out: GET /api/authenticate with the token.
  const operation = page.locator("#operations-authenticate-authenticate_get");
  await operation.locator(".opblock-summary").first().click();
  await operation.locator("button.try-out__btn").click();
  await operation.locator("button.execute").click();
  const status = operation.locator(".live-responses-table tr.response td.response-col_status").first();
  await status.waitFor();
  const body = await operation.locator(".live-responses-table .response-col_description pre").first().textContent();
  await page.screenshot({ path: join(opts.screenshots, "api-docs-called.png"), fullPage: false });
  emit({
    operations,
    shown,
    clientId,
    status: Number.parseInt((await status.textContent()).trim(), 10),
    body,
    consoleErrors: errors,
    violations,
  });
  await browser.close();
  process.exit(0);
} catch (e) {
  await page?.screenshot({ path: join(opts.screenshots, "api-docs-failed.png") }).catch(() => {});
  emit({ error: String(e?.stack ?? e), at: page?.url(), consoleErrors: errors });
  await browser?.close().catch(() => {});
  process.exit(1);
}
