"""Settings for the whole suite."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

# CI runs on a shared 2-core machine: a slow example is load, not a bug. Every property test still
# explores random inputs; only the timing checks are off.
settings.register_profile("mcp-elicit", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("mcp-elicit")
