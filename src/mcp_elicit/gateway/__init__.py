"""The gateway: our client kit upstream, our server kit downstream, and the mapping between them."""

from mcp_elicit.gateway.app import Gateway
from mcp_elicit.gateway.config import GatewayConfig, Upstream, parse_config

__all__ = ["Gateway", "GatewayConfig", "Upstream", "parse_config"]
