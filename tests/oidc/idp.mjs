// A real OpenID Connect provider for the tests (panva's certified oidc-provider), on 127.0.0.1 only.
//
// Its development log-in page takes any login name and password: the name becomes the subject (`sub`). The
// claims of each subject come from the JSON in OIDC_TEST_ACCOUNTS ({"<sub>": {"email": ..., ...}}); a subject
// not listed gets <sub>@idp.test, verified. Consent is granted at once, as a university's IdP does for its
// own services, so a log-in is one form. It prints its issuer URL on the first line of stdout once it listens.
import http from 'node:http';

import Provider from 'oidc-provider';

const clientId = process.env.OIDC_TEST_CLIENT_ID;
const clientSecret = process.env.OIDC_TEST_CLIENT_SECRET;
const redirectUris = JSON.parse(process.env.OIDC_TEST_REDIRECT_URIS);
const postLogoutRedirectUris = JSON.parse(process.env.OIDC_TEST_POST_LOGOUT_REDIRECT_URIS || '[]');
const accounts = JSON.parse(process.env.OIDC_TEST_ACCOUNTS || '{}');

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: redirectUris,
      post_logout_redirect_uris: postLogoutRedirectUris,
    }],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'given_name', 'family_name', 'preferred_username'] },
    async findAccount(ctx, sub) {
      const claims = accounts[sub] ?? { email: `${sub}@idp.test`, email_verified: true };
      return { accountId: sub, async claims() { return { sub, ...claims }; } };
    },
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId,
                                                  accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope('openid email profile');
      await grant.save();
      return grant;
    },
    features: { devInteractions: { enabled: true } },
    pkce: { required: () => true },
  });
  // Plain HTTP on loopback: the provider must not insist on the secure cookies of a TLS deployment.
  provider.proxy = false;
  server.on('request', provider.callback());
  process.stdout.write(`${issuer}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
