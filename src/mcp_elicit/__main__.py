from mcp_elicit.cli import main

main()
