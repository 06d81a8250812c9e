"""Pure ASGI middleware, one concern each. Outermost first, as main.py adds them:

- RequestContext: the request's id, carried by every log line written while it is served;
- SecurityHeaders: the id and the security headers on every answer;
- AccessLog: the access log line, metrics and writes in flight; the answer when the app
  raised before giving one;
- BodyLimits: 413 for a body over the size limit, 408 for one too slow;
- RequestGuard: refuses what a web page could send on the user's behalf.

So every answer an inner one gives (a refusal, a 413) carries the headers and is logged
and counted, inside the request's context.
"""

from app.api.middleware.access import AccessLog, Load
from app.api.middleware.context import RequestContext
from app.api.middleware.guard import RequestGuard
from app.api.middleware.headers import SecurityHeaders
from app.api.middleware.limits import BodyLimits

__all__ = [
    "AccessLog",
    "BodyLimits",
    "Load",
    "RequestContext",
    "RequestGuard",
    "SecurityHeaders",
]
