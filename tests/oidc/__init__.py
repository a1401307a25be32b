"""A local OpenID Connect provider for the tests: ``oidc-provider`` (npm) run by node on 127.0.0.1."""
