// A real OpenID provider for the portal's tests: the certified `oidc-provider`, with a login form
// of its own that checks passwords (a wrong one is refused here, at the provider).
//
//   node provider.mjs CONFIG.json        (or OIDC_PROVIDER_CONFIG=CONFIG.json node provider.mjs)
//
// CONFIG.json: {"port": 0, "client": {"client_id", "client_secret", "redirect_uris": [...],
// "post_logout_redirect_uris": [...]}, "accounts": {"<username>": {"password", "email",
// "groups": [...], "preferred_username" (default: the username), "email_verified" (default: true)}},
// "jwks": {"keys": [...]} (optional: the private signing keys)}.
// Port 0 takes a free one. Once listening it prints one line, `issuer <url>`. The accounts are read
// again at each sign-in and each claims lookup, so a test can change a user's groups in between.
// Claims: sub (the user name), preferred_username, email (+ email_verified) and groups, given for
// the scopes `profile` (preferred_username, groups) and `email`; in the code flow they come from the
// userinfo endpoint (the ID token holds sub), as with most providers.

import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';

import Provider from 'oidc-provider';

const configPath = process.argv[2] || process.env.OIDC_PROVIDER_CONFIG;
if (!configPath) {
  console.error('usage: node provider.mjs CONFIG.json');
  process.exit(2);
}
const readConfig = () => JSON.parse(readFileSync(configPath, 'utf8'));
const accounts = () => readConfig().accounts || {};
const config = readConfig();

const escape = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title, body) {
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><main><h1>${escape(title)}</h1>${body}</main></body></html>`;
}

function loginForm(uid, { username = '', error = '' } = {}) {
  return page('Test provider sign-in', `
${error ? `<p class="error" id="provider-error">${escape(error)}</p>` : ''}
<form method="post" action="/interaction/${escape(uid)}/login" id="provider-login">
  <label for="provider-username">Username</label>
  <input id="provider-username" name="username" autocomplete="username" value="${escape(username)}" required>
  <label for="provider-password">Password</label>
  <input id="provider-password" name="password" type="password" autocomplete="current-password" required>
  <button type="submit" id="provider-submit">Sign in at the provider</button>
</form>
<form method="post" action="/interaction/${escape(uid)}/abort"><button type="submit" id="provider-cancel">Cancel</button></form>`);
}

async function readForm(req) {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 65536) throw new Error('body too large');
  }
  return Object.fromEntries(new URLSearchParams(body));
}

function send(res, status, html) {
  res.writeHead(status, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
  res.end(html);
}

// The first party's client: every scope it asks for is granted without a consent page.
async function loadExistingGrant(ctx) {
  const { oidc } = ctx;
  const grant = new oidc.provider.Grant({ clientId: oidc.client.clientId, accountId: oidc.session.accountId });
  grant.addOIDCScope(oidc.params.scope || 'openid');
  await grant.save();
  return grant;
}

async function findAccount(_ctx, sub) {
  const account = accounts()[sub];
  if (!account) return undefined;
  return {
    accountId: sub,
    async claims() {
      const now = accounts()[sub] || account; // the groups as they are now
      return {
        sub,
        preferred_username: now.preferred_username ?? sub,
        email: now.email,
        email_verified: now.email_verified ?? true,
        groups: now.groups || [],
      };
    },
  };
}

// The provider's own end-session page, submitted at once: the RP sent id_token_hint.
async function logoutSource(ctx, form) {
  ctx.body = page('Signing out', `${form.replace('</form>', '<input type="hidden" name="logout" value="yes"></form>')}
<button type="submit" form="op.logoutForm" id="provider-logout">Sign out</button>
<script>document.getElementById('op.logoutForm').submit();</script>`);
}

async function postLogoutSuccessSource(ctx) {
  ctx.body = page('Signed out', '<p id="provider-signed-out">You are signed out of the test provider.</p>');
}

const server = http.createServer();
server.listen(config.port || 0, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = config.issuer || `http://127.0.0.1:${port}`;
  // The signing key: the config's (a test that forges tokens signs with it too), else a new one.
  const jwks = config.jwks || {
    keys: [
      {
        ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
        kid: 'test-key',
        use: 'sig',
        alg: 'RS256',
      },
    ],
  };
  const provider = new Provider(issuer, {
    clients: [
      {
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
        ...config.client,
      },
    ],
    jwks,
    cookies: { keys: [randomBytes(32).toString('hex')] },
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['preferred_username', 'groups'],
    },
    findAccount,
    loadExistingGrant,
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      rpInitiatedLogout: { enabled: true, logoutSource, postLogoutSuccessSource },
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    renderError: async (ctx, out) => {
      ctx.type = 'html';
      ctx.body = page('Provider error', `<pre id="provider-error">${escape(JSON.stringify(out))}</pre>`);
    },
  });
  const callback = provider.callback();

  server.on('request', async (req, res) => {
    const match = req.url.match(/^\/interaction\/([\w-]+)(?:\/(login|abort))?(?:\?.*)?$/);
    if (!match) {
      callback(req, res);
      return;
    }
    try {
      const details = await provider.interactionDetails(req, res);
      const [, uid, action] = match;
      if (details.uid !== uid) {
        send(res, 400, page('Provider error', '<p>Unknown interaction.</p>'));
      } else if (!action && req.method === 'GET') {
        send(res, 200, loginForm(uid));
      } else if (action === 'abort' && req.method === 'POST') {
        await provider.interactionFinished(
          req,
          res,
          { error: 'access_denied', error_description: 'the user cancelled the sign-in' },
          { mergeWithLastSubmission: false },
        );
      } else if (action === 'login' && req.method === 'POST') {
        const form = await readForm(req);
        const account = accounts()[form.username];
        if (!account || account.password !== form.password) {
          send(res, 200, loginForm(uid, { username: form.username, error: 'Wrong user name or password.' }));
          return;
        }
        await provider.interactionFinished(
          req,
          res,
          { login: { accountId: form.username } },
          { mergeWithLastSubmission: false },
        );
      } else {
        send(res, 405, page('Provider error', '<p>Method not allowed.</p>'));
      }
    } catch (error) {
      send(res, 400, page('Provider error', `<pre>${escape(error.message)}</pre>`));
    }
  });
  console.log(`issuer ${issuer}`);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    server.close();
    process.exit(0);
  });
}
