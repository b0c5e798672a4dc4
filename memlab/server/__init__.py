"""The agent server (seed 000's "Agent Wrapper"): memlab's agents over HTTP, one per session.

Every session has its own Agent and its own scoped memory; sessions never see each other's
memory. Routes (OpenAPI page at ``/docs``): ``POST /sessions``, ``POST /sessions/{id}/turn``,
``/observe``, ``/sleep``, ``DELETE /sessions/{id}``, ``GET /sessions/{id}/memory``, and the seed's
``POST /turn`` (BenchmarkTurnPayload) on a default session.

Example:
    memlab serve --condition rag --port 8765
    curl -s localhost:8765/sessions -H 'Content-Type: application/json' -d '{"user_id": "ana"}'
"""

from memlab.server.app import TurnReply, create_app
from memlab.server.run import extra_routers, serve
from memlab.server.sessions import SessionManager

__all__ = ["SessionManager", "TurnReply", "create_app", "extra_routers", "serve"]
