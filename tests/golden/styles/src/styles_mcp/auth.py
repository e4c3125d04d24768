"""Your authentication extension points: upstream credentials chosen per caller.

mcpmint wrote this file once, when it was missing, and never changes it: it is yours.

Over streamable HTTP with inbound auth on (`STYLES_AUTH=jwt` or `introspection`),
every call has a verified caller: its `subject`, `client_id`, `scopes` and every claim of its
token (`claims`). Before a tool's request is built, `upstream_credentials` is asked, for each
security scheme the tool may use, which credential to send upstream for this caller: a key
from a per-user key store, a token from a token exchange (RFC 8693) with your authorization
server, ... Return `None` to use the scheme's environment variables (README.md lists them).

- `UpstreamCredential(value=...)`: the API key (apiKey schemes) or the access token (http
  bearer, oauth2 and openIdConnect schemes, sent as `Authorization: Bearer ...`);
  `UpstreamCredential(username=..., password=...)` for http basic.
- `caller.token` is the caller's own access token, for a token exchange only: it is issued
  for this server and never goes upstream (a credential equal to it is refused).
- An exception here refuses the call (an error result naming its type; nothing is sent) and
  is logged with its traceback.
- Over stdio, in memory, or with `STYLES_AUTH=none` there is no verified caller:
  this function is not called and the environment's credentials are used.
"""

from __future__ import annotations

from ._runtime.auth import Caller, UpstreamCredential

__all__ = ["Caller", "UpstreamCredential", "upstream_credentials"]


async def upstream_credentials(caller: Caller, tool: str, scheme: str) -> UpstreamCredential | None:
    """The credential for security scheme `scheme` when `caller` calls `tool`, or None."""
    return None
