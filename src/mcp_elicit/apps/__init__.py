"""Applications built only with mcp-elicit's public kits."""
