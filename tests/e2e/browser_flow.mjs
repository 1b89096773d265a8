// medialib's OAuth sign-in and consent pages in a real headless Chromium (Debian's
// /usr/bin/chromium, driven by playwright-core; no browser is downloaded).
//
// The client's redirect_uri is a loopback URL, http://127.0.0.1:PORT/callback, served by
// a tiny HTTP server that this script starts on a free port, so the browser really lands
// on the callback. The client is registered with http://127.0.0.1/callback: for loopback
// IP literals the server accepts any port (RFC 8252 §7.3).
//
// Steps: discovery; open the authorization URL (PKCE S256); fill #username and
// #password; click "Sign in"; the consent page names the client and answers with
// X-Frame-Options: DENY (screenshot saved to a temporary directory); click "Approve"; the
// callback gets code, the same state and iss; the code is exchanged with a plain fetch
// (client_secret_post) and the token works on /api/authenticate; the pages logged no
// console error.
//
// Prints one JSON line per check and a summary line; exits 1 on any failure, 2 on bad
// arguments.
//
// Arguments (or the environment variables in brackets): --base [MEDIALIB_E2E_BASE],
// --client-id [MEDIALIB_E2E_CLIENT_ID], --client-secret [MEDIALIB_E2E_CLIENT_SECRET],
// --client-name [MEDIALIB_E2E_CLIENT_NAME], --username [MEDIALIB_E2E_USERNAME],
// --password [MEDIALIB_E2E_PASSWORD]. CHROMIUM overrides the browser's path; screenshots go
// to MEDIALIB_E2E_FILES (a directory) or else to a new temporary directory.

import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { chromium } from 'playwright-core';

const STEP_TIMEOUT_MS = 15_000;
const OVERALL_TIMEOUT_MS = 90_000;
const SCOPE = 'read write';

class CheckFailed extends Error {}

const started = Date.now();
let passed = 0;
const failures = [];

function emit(record) {
  process.stdout.write(`${JSON.stringify(record)}\n`);
}

function that(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

/** Runs `body` as one named check; a failure is reported and ends the flow. */
async function check(name, body) {
  const detail = {};
  const checkStarted = Date.now();
  try {
    await body(detail);
  } catch (e) {
    const message = e instanceof CheckFailed ? e.message : `unexpected error: ${e?.stack ?? e}`;
    failures.push(`${name}: ${message}`);
    emit({ check: name, ok: false, message });
    throw new FlowAborted();
  }
  passed += 1;
  emit({ check: name, ok: true, ms: Date.now() - checkStarted, ...detail });
}

class FlowAborted extends Error {}

function summary() {
  emit({
    summary: true,
    passed,
    failed: failures.length,
    seconds: (Date.now() - started) / 1000,
    failures,
  });
  return failures.length ? 1 : 0;
}

function options() {
  const env = process.env;
  const { values } = parseArgs({
    options: {
      base: { type: 'string', default: env.MEDIALIB_E2E_BASE },
      'client-id': { type: 'string', default: env.MEDIALIB_E2E_CLIENT_ID },
      'client-secret': { type: 'string', default: env.MEDIALIB_E2E_CLIENT_SECRET },
      'client-name': { type: 'string', default: env.MEDIALIB_E2E_CLIENT_NAME },
      username: { type: 'string', default: env.MEDIALIB_E2E_USERNAME },
      password: { type: 'string', default: env.MEDIALIB_E2E_PASSWORD },
    },
  });
  const missing = ['base', 'client-id', 'client-secret', 'client-name', 'username', 'password']
    .filter((k) => !values[k])
    .map((k) => `--${k}`);
  if (missing.length) {
    process.stderr.write(`browser_flow.mjs: missing: ${missing.join(', ')}\n`);
    process.exit(2);
  }
  return { ...values, base: values.base.replace(/\/+$/, '') };
}

/** Starts the client's callback server on 127.0.0.1:0; `next()` resolves with the URL it gets. */
async function callbackServer() {
  let deliver;
  const received = new Promise((resolve) => {
    deliver = resolve;
  });
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, `http://${req.headers.host}`);
    if (url.pathname === '/callback') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><title>Signed in</title><p>You can close this window.</p>');
      deliver(url);
    } else {
      res.writeHead(204);
      res.end();
    }
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return { server, port: server.address().port, received };
}

/** The next response that the main frame navigates to, redirects followed. */
function nextPage(page) {
  return new Promise((resolve) => {
    const onResponse = (r) => {
      const redirect = r.status() >= 300 && r.status() < 400;
      if (r.request().isNavigationRequest() && r.frame() === page.mainFrame() && !redirect) {
        page.off('response', onResponse);
        resolve(r);
      }
    };
    page.on('response', onResponse);
  });
}

/** A page's text on one line, cut short. */
function brief(text) {
  return text.replace(/\s+/g, ' ').trim().slice(0, 300);
}

function withTimeout(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new CheckFailed(`timed out waiting for ${what}`)), STEP_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function main() {
  const opts = options();
  const callback = await callbackServer();
  const redirectUri = `http://127.0.0.1:${callback.port}/callback`;
  const shots = process.env.MEDIALIB_E2E_FILES || mkdtempSync(join(tmpdir(), 'medialib-e2e-'));
  const consoleErrors = [];
  let browser;
  let context;
  let page;
  try {
    let metadata;
    await check('discovery', async (d) => {
      const r = await fetch(`${opts.base}/.well-known/oauth-authorization-server`);
      that(r.status === 200, `metadata answered ${r.status}`);
      metadata = await r.json();
      that(
        metadata.authorization_endpoint === `${opts.base}/api/oauth/authorize`,
        `authorization_endpoint ${metadata.authorization_endpoint}`,
      );
      that(
        metadata.token_endpoint === `${opts.base}/api/oauth/access_token`,
        `token_endpoint ${metadata.token_endpoint}`,
      );
      d.issuer = metadata.issuer;
    });

    const state = randomBytes(18).toString('base64url');
    const verifier = randomBytes(48).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const authorizeUrl = new URL(metadata.authorization_endpoint);
    for (const [k, v] of Object.entries({
      response_type: 'code',
      client_id: opts['client-id'],
      redirect_uri: redirectUri,
      state,
      scope: SCOPE,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    })) {
      authorizeUrl.searchParams.set(k, v);
    }

    await check('chromium starts', async (d) => {
      browser = await chromium.launch({
        executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
        headless: true,
        args: [
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
      context = await browser.newContext();
      page = await context.newPage();
      page.setDefaultTimeout(STEP_TIMEOUT_MS);
      page.on('console', (m) => {
        if (m.type() === 'error') consoleErrors.push(`${page.url()}: ${m.text()}`);
      });
      page.on('pageerror', (e) => consoleErrors.push(`${page.url()}: uncaught ${e.message}`));
      d.version = browser.version();
    });

    await check('a redirect_uri with another path is refused (no redirect)', async () => {
      // In a page of its own: its 400 is expected, and logs a console error there.
      const probe = await context.newPage();
      try {
        const wrong = new URL(authorizeUrl);
        wrong.searchParams.set('redirect_uri', `http://127.0.0.1:${callback.port}/elsewhere`);
        const r = await probe.goto(wrong.href);
        that(r && r.status() === 400, `answered ${r?.status()} ${probe.url()}`);
        that(new URL(probe.url()).origin === new URL(opts.base).origin, `redirected to ${probe.url()}`);
      } finally {
        await probe.close();
      }
    });

    await check('sign-in page', async (d) => {
      const r = await page.goto(authorizeUrl.href);
      that(r && r.status() === 200, `GET authorize answered ${r?.status()}`);
      that(
        (await r.headerValue('x-frame-options'))?.toUpperCase() === 'DENY',
        'sign-in page without X-Frame-Options: DENY',
      );
      const cookies = (await page.context().cookies()).map((c) => c.name);
      that(cookies.includes('medialib_login'), `no medialib_login cookie (cookies: ${cookies})`);
      await page.locator('#username').fill(opts.username);
      await page.locator('#password').fill(opts.password);
      d.title = await page.title();
    });

    await check('sign in, consent page', async (d) => {
      const [response] = await Promise.all([
        withTimeout(nextPage(page), 'the page after "Sign in"'),
        page.getByRole('button', { name: 'Sign in' }).click(),
      ]);
      const text = await page.innerText('body');
      that(
        response.status() === 200 && new URL(response.url()).pathname === '/api/oauth/authorize',
        `signing in led to ${response.status()} ${response.url()}: ${brief(text)}`,
      );
      const cookies = (await page.context().cookies()).map((c) => c.name);
      that(
        cookies.includes('medialib_session'),
        `signing in set no medialib_session cookie (cookies: ${cookies})`,
      );
      that(
        text.includes(opts['client-name']),
        `the consent page does not name the client '${opts['client-name']}': ${brief(text)}`,
      );
      const xfo = await response.headerValue('x-frame-options');
      that(xfo?.toUpperCase() === 'DENY', `the consent page's X-Frame-Options is ${xfo}, not DENY`);
      d.screenshot = join(shots, 'consent.png');
      await page.screenshot({ path: d.screenshot, fullPage: true });
    });

    let callbackUrl;
    await check('approve, callback', async (d) => {
      const [response] = await Promise.all([
        withTimeout(nextPage(page), 'the page after "Approve"'),
        page.getByRole('button', { name: 'Approve' }).click(),
      ]);
      const landed = new URL(response.url());
      that(
        landed.port === String(callback.port) && landed.pathname === '/callback',
        `approving led to ${response.status()} ${response.url()}, not the callback: ${brief(await page.innerText('body'))}`,
      );
      const url = await withTimeout(callback.received, 'the callback request');
      callbackUrl = url;
      const p = url.searchParams;
      that(p.get('code'), `no code in ${url}`);
      that(p.get('state') === state, `state ${p.get('state')} != sent ${state}`);
      that(p.get('iss') === metadata.issuer, `iss ${p.get('iss')} != issuer ${metadata.issuer}`);
      that(!p.has('error'), `error in ${url}`);
      d.keys = [...p.keys()].sort();
    });

    let accessToken;
    await check('code exchange (fetch, client_secret_post)', async (d) => {
      const r = await fetch(metadata.token_endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: callbackUrl.searchParams.get('code'),
          redirect_uri: redirectUri,
          code_verifier: verifier,
          client_id: opts['client-id'],
          client_secret: opts['client-secret'],
        }),
      });
      const body = await r.json().catch(() => ({}));
      that(r.status === 200, `token endpoint answered ${r.status}: ${JSON.stringify(body)}`);
      that(
        body.token_type?.toLowerCase() === 'bearer' && body.access_token,
        `token response ${JSON.stringify(body)}`,
      );
      that(!('refresh_token' in body), 'a refresh_token without access_type=offline');
      accessToken = body.access_token;
      d.expires_in = body.expires_in;
    });

    await check('the token works on /api/authenticate', async () => {
      const r = await fetch(`${opts.base}/api/authenticate`, {
        headers: { authorization: `Bearer ${accessToken}` },
      });
      const body = await r.json();
      that(
        r.status === 200 && body.authenticated === 'true',
        `/api/authenticate: ${r.status} ${JSON.stringify(body)}`,
      );
    });

    await check('no console errors', async () => {
      that(consoleErrors.length === 0, `console errors: ${consoleErrors.join(' | ')}`);
    });
  } catch (e) {
    if (!(e instanceof FlowAborted)) throw e;
    if (page) {
      const path = join(shots, 'failure.png');
      await page.screenshot({ path, fullPage: true }).catch(() => {});
      emit({ screenshot_on_failure: path, url: page.url() });
    }
  } finally {
    await browser?.close().catch(() => {});
    callback.server.close();
  }
  return summary();
}

const overall = setTimeout(() => {
  failures.push(`the whole flow took longer than ${OVERALL_TIMEOUT_MS / 1000}s`);
  process.exit(summary());
}, OVERALL_TIMEOUT_MS);
overall.unref();

main().then(
  (code) => process.exit(code),
  (e) => {
    failures.push(`unexpected error: ${e?.stack ?? e}`);
    process.exit(summary());
  },
);
