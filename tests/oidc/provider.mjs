// A real OpenID Connect provider for medialib's `oidc` sign-in tests
// (tests/integration/oauth/oidc.rs): Node's `oidc-provider`, pinned in package.json.
//
// Listens on 127.0.0.1, port OIDC_PORT (default 0: any free port), and prints one JSON line on
// standard output once it listens: {"issuer": "http://127.0.0.1:PORT"}. It signs with an RSA key
// made at start (a fresh `kid` each time, so restarting it on the same port rotates the keys).
//
// The test drives it with JSON lines on standard input; each is answered with one JSON line
// ({"ok": "<command>"} or {"error": "..."}) on standard output:
//   {"client": {...}}   registers a client (oidc-provider client metadata: client_id,
//                       client_secret, redirect_uris, token_endpoint_auth_method, ...)
//   {"account": {"id": "...", "given_name": "...", ...}}
//                       sets the claims of an account (sign in at the login form with its id)
//   {"tamper": {"aud": "other" | null, "expired_by": SECONDS}}
//                       makes the next ID tokens misbehave, as a broken or hostile provider
//                       would: another audience, or an `exp` SECONDS in the past (0: off)
// It exits when standard input closes (the test ended).
//
// OIDC_CONFORM=0 puts the profile claims into the ID token too (oidc-provider's
// `conformIdTokenClaims: false`); by default they are only at the userinfo endpoint.
//
// Interactions are oidc-provider's development ones: GET /interaction/UID shows a login form
// (any password; the login is the account id) and then a consent form, both answered with a
// POST to the same path; GET /interaction/UID/abort cancels (access_denied).

import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';

import Provider from 'oidc-provider';

// Standard output carries the protocol only: oidc-provider's notices go to standard error.
console.log = console.error;
console.info = console.error;

const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);

const accounts = new Map();
const tamper = { aud: null, expiredBy: 0 };

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = {
  ...privateKey.export({ format: 'jwk' }),
  kid: randomBytes(8).toString('hex'),
  alg: 'RS256',
  use: 'sig',
};

function configuration() {
  return {
    clients: [],
    jwks: { keys: [signingKey] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    claims: {
      openid: ['sub'],
      profile: ['given_name', 'family_name', 'preferred_username', 'employee_number'],
    },
    conformIdTokenClaims: process.env.OIDC_CONFORM !== '0',
    features: { devInteractions: { enabled: true } },
    async findAccount(_ctx, id) {
      return {
        accountId: id,
        async claims() {
          return { ...(accounts.get(id) ?? {}), sub: id };
        },
      };
    },
  };
}

// Tampering, for the negative tests: wraps the ID token's issue step.
function installTampering(provider) {
  const issue = provider.IdToken.prototype.issue;
  provider.IdToken.prototype.issue = function tampered(options = {}) {
    let opts = options;
    if (opts.use === 'idtoken') {
      if (tamper.aud) {
        const real = this.client;
        this.client = new Proxy(real, {
          get: (target, property) => (property === 'clientId' ? tamper.aud : Reflect.get(target, property, target)),
        });
      }
      if (tamper.expiredBy > 0) {
        opts = { ...opts, expiresAt: Math.floor(Date.now() / 1000) - tamper.expiredBy };
      }
    }
    return issue.call(this, opts);
  };
}

let provider;
let handler = (_req, res) => {
  res.statusCode = 503;
  res.end();
};
const server = createServer((req, res) => handler(req, res));

server.listen(Number(process.env.OIDC_PORT ?? 0), '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  provider = new Provider(issuer, configuration());
  provider.on('server_error', (_ctx, error) => console.error('oidc-provider server_error:', error));
  installTampering(provider);
  handler = provider.callback();
  send({ issuer, kid: signingKey.kid });
});

async function command(line) {
  const message = JSON.parse(line);
  if (message.client) {
    await provider.Client.adapter.upsert(message.client.client_id, message.client);
    // Loads (and so validates) the metadata now rather than at the first sign-in.
    const client = await provider.Client.find(message.client.client_id);
    if (!client) throw new Error('the client was not registered');
    return 'client';
  }
  if (message.account) {
    const { id, ...claims } = message.account;
    accounts.set(id, claims);
    return 'account';
  }
  if (message.tamper) {
    tamper.aud = message.tamper.aud ?? null;
    tamper.expiredBy = message.tamper.expired_by ?? 0;
    return 'tamper';
  }
  throw new Error(`unknown command: ${line}`);
}

const input = createInterface({ input: process.stdin });
input.on('line', (line) => {
  if (!line.trim()) return;
  command(line).then(
    (ok) => send({ ok }),
    (error) => send({ error: String(error?.message ?? error) }),
  );
});
input.on('close', () => {
  server.close();
  process.exit(0);
});
